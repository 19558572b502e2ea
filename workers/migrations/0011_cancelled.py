# Cancellation (issue 29, item 4): a run's ``cancelled`` status and its timeline step.

from django.db import migrations, models

STATUSES = [
    ("running", "running"),
    ("succeeded", "succeeded"),
    ("failed", "failed"),
    ("dead", "dead-lettered"),
    ("cancelled", "cancelled"),
]
KINDS = [
    (k, k)
    for k in (
        "ran", "idempotency_hit", "busy", "failed", "fenced", "released", "committed",
        "dead_lettered", "deleted", "deferred", "cancelled",
    )
]  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [
        ("workers", "0010_door_engine"),
    ]

    operations = [
        migrations.AlterField(
            model_name="agentrun",
            name="status",
            field=models.CharField(choices=STATUSES, default="running", max_length=16),
        ),
        migrations.AlterField(
            model_name="timelinestep",
            name="kind",
            field=models.CharField(choices=KINDS, max_length=16),
        ),
    ]
