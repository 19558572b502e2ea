"""What is read back for people: the one O(1) sample of every stream, group, consumer, counter
and budget (used by the console, the API and ``manage.py streams``), and the history recorded
from it once a second by one elected recorder, behind the console's charts."""
