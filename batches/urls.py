from django.urls import path

from batches.views import BatchListView, BatchView, CustomerBatchListView, CustomerBatchView
from batches.views_iso20022 import (
    BatchFileView,
    BatchStatusReportView,
    CustomerBatchFileView,
    CustomerBatchStatusReportView,
)

# `files` before `<batchId>`: the file route is not a batch id.
urlpatterns = [
    path("batch-payments", BatchListView.as_view()),
    path("batch-payments/files", BatchFileView.as_view()),
    path("batch-payments/<str:batchId>", BatchView.as_view()),
    path("batch-payments/<str:batchId>/status-report", BatchStatusReportView.as_view()),
    path("customers/<str:customerId>/batch-payments", CustomerBatchListView.as_view()),
    path("customers/<str:customerId>/batch-payments/files", CustomerBatchFileView.as_view()),
    path("customers/<str:customerId>/batch-payments/<str:batchId>", CustomerBatchView.as_view()),
    path(
        "customers/<str:customerId>/batch-payments/<str:batchId>/status-report",
        CustomerBatchStatusReportView.as_view(),
    ),
]
