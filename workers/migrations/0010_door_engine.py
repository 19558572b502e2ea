# The engine's own door for audit records (housekeeping removing ghost consumers).

from django.db import migrations, models

DOORS = [("console", "console"), ("cli", "command line"), ("api", "API"), ("engine", "engine")]


class Migration(migrations.Migration):
    dependencies = [
        ("workers", "0009_graph_checkpoints"),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditrecord",
            name="door",
            field=models.CharField(choices=DOORS, max_length=16),
        ),
        migrations.AlterField(
            model_name="bulkjob",
            name="door",
            field=models.CharField(choices=DOORS, max_length=16),
        ),
    ]
