"""The console's pages: thin views that validate input, call a reader and render."""
