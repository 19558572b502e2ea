"""The operator actions: what each takes (``action_forms``), the one door every action goes
through (``services``) and the JSON API that offers them to scripts (``api``). Imports the
reads, the live layer's health marks, the edge's throttle and the engine; never the views."""
