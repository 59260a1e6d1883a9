from django.urls import path

from approvals.views import (
    ApprovalApproveView,
    ApprovalChallengeView,
    ApprovalListView,
    ApprovalPolicyView,
    ApprovalRejectView,
    ApprovalView,
    SandboxApprovalExpireView,
)

urlpatterns = [
    path("approval-policy", ApprovalPolicyView.as_view()),
    path("approvals", ApprovalListView.as_view()),
    path("approvals/<str:approvalId>", ApprovalView.as_view()),
    path("approvals/<str:approvalId>/challenge", ApprovalChallengeView.as_view()),
    path("approvals/<str:approvalId>/approve", ApprovalApproveView.as_view()),
    path("approvals/<str:approvalId>/reject", ApprovalRejectView.as_view()),
    path("sandbox/approvals/<str:approvalId>/expire", SandboxApprovalExpireView.as_view()),
]
