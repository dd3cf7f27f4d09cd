"""The fleet: many autoscalers on shared node pools (issue 38, being built; docs/fleet.md says what exists).

``pyhpa.fleet.spec``: the fleet file (``kind: Fleet``) as typed structs, its node autoscaler settings with their
upstream defaults (Cluster Autoscaler's flags, Karpenter's NodePool fields and settings), and ``load_fleet``,
which reads a fleet file and every file it names and refuses a bad one with one line naming the file, the
workload or node pool, and the field.
"""
