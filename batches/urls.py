from django.urls import path

from batches.views import BatchListView, BatchView, CustomerBatchListView, CustomerBatchView

urlpatterns = [
    path("batch-payments", BatchListView.as_view()),
    path("batch-payments/<str:batchId>", BatchView.as_view()),
    path("customers/<str:customerId>/batch-payments", CustomerBatchListView.as_view()),
    path("customers/<str:customerId>/batch-payments/<str:batchId>", CustomerBatchView.as_view()),
]
