"""Template tags the pages load (``{% load streamdesk %}``): numbers with their units, times,
pause notes and a bulk job's counts. Django finds them under this name; they import the live
layer's rows, ``console.params`` and the engine, never a view or an action."""
