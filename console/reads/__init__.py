"""The read models behind the pages: bounded pages of entries, pending entries and dead
letters, each entry's state, one event's record, the browsing pages' forms and the preview
guard. Imports the engine and ``console.params`` only: never the live layer, views or API."""
