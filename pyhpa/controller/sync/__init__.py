"""The sync loop: the work queue, one sync of one autoscaler, its inputs (metrics, predictions) and the controller memory."""
