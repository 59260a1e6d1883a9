from django.urls import path

from events.views import (
    EventListView,
    EventRedeliverView,
    WebhookEndpointListView,
    WebhookEndpointRotateView,
    WebhookEndpointView,
)

urlpatterns = [
    path("events", EventListView.as_view()),
    path("events/<str:eventId>/redeliver", EventRedeliverView.as_view()),
    path("webhook-endpoints", WebhookEndpointListView.as_view()),
    path("webhook-endpoints/<str:endpointId>", WebhookEndpointView.as_view()),
    path("webhook-endpoints/<str:endpointId>/rotate-secret", WebhookEndpointRotateView.as_view()),
]
