"""The fleet: many autoscalers on shared node pools that take minutes to grow, and their bill (docs/fleet.md).

- ``spec``: the fleet file (``kind: Fleet``) as typed structs, with the node autoscalers' settings and upstream
  defaults; ``load_fleet`` reads it and every file it names, or refuses it with one line naming the file, the
  workload or node pool, and the field.
- ``scheduler``: kube-scheduler v1.37.2's NodeResourcesFit (filter, LeastAllocated/MostAllocated scores, pod
  requests), a port checked against upstream's plugin on random inputs.
- ``nodeautoscalers``: the Cluster Autoscaler and Karpenter models, each reading a view of the pools and returning
  actions (launch, delete, replace) that the engine carries out; ``MODELS`` is their registry.
- ``engine``: ``FleetRun``, one clock over every workload's simulated cluster (``pyhpa.simulate.cluster``: the same
  decision core), the scheduler, the nodes and the node autoscaler.
- ``report``, ``plots``: summary.json, workloads.csv, timeline.csv, events.csv, the plots and report.html.
- ``whatif``: a fleet changed by overlays, and two fleets compared.
- ``snapshot``: a fleet file from a cluster and its Prometheus.
- ``tune``: every workload tuned (on a Dask cluster), then the whole recommendation's bill.
"""
