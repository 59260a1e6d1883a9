from django.urls import path

from sandbox.views import SandboxCustomerCreateView, TestClockAdvanceView, TestClockListView, TestClockView

urlpatterns = [
    path("sandbox/customers", SandboxCustomerCreateView.as_view()),
    path("sandbox/test-clocks", TestClockListView.as_view()),
    path("sandbox/test-clocks/<str:testClockId>", TestClockView.as_view()),
    path("sandbox/test-clocks/<str:testClockId>/advance", TestClockAdvanceView.as_view()),
]
