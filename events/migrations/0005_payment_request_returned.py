# The event type payment_request.returned (a settled payment sent back by the payee's bank).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('events', '0004_alter_event_type'),
    ]

    operations = [
        migrations.AlterField(
            model_name='event',
            name='type',
            field=models.CharField(choices=[('payment_request.accepted', 'Payment Request Accepted'), ('payment_request.held', 'Payment Request Held'), ('payment_request.approved', 'Payment Request Approved'), ('payment_request.settled', 'Payment Request Settled'), ('payment_request.failed', 'Payment Request Failed'), ('payment_request.returned', 'Payment Request Returned'), ('scheduled_payment.run_succeeded', 'Scheduled Payment Run Succeeded'), ('scheduled_payment.run_failed', 'Scheduled Payment Run Failed'), ('scheduled_payment.completed', 'Scheduled Payment Completed'), ('batch.funded', 'Batch Funded'), ('batch.funding_failed', 'Batch Funding Failed'), ('batch.completed', 'Batch Completed'), ('batch.partially_failed', 'Batch Partially Failed'), ('batch.failed', 'Batch Failed'), ('application.stage_changed', 'Application Stage Changed'), ('application.verification_updated', 'Application Verification Updated'), ('card.issued', 'Card Issued'), ('approval.requested', 'Approval Requested'), ('approval.approved', 'Approval Approved'), ('approval.executed', 'Approval Executed'), ('approval.failed', 'Approval Failed'), ('approval.rejected', 'Approval Rejected'), ('approval.expired', 'Approval Expired')], max_length=64),
        ),
    ]
