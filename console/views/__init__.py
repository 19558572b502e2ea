"""The console's pages: thin views that validate input, call a reader or an action's service,
and render. Views may import every other part of the console; within it only ``urls.py``
imports them."""
