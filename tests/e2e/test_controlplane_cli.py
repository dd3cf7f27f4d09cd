"""``python -m controlplane up``, the README's way to try pyhpa on a real cluster: it starts, says where, serves
kubectl (its KWOK nodes, ``kubectl top`` through metrics-server; with ``--prometheus`` a Prometheus scraping the
nodes' kubelet endpoints and prometheus-adapter's Pods metric ``cpu_usage`` from it) and ``pyhpa run``, and SIGTERM
stops every component it started. ``python -m controlplane version`` names each binary's version."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from control_plane_gate import require_control_plane

from controlplane import bin_dir
from controlplane.prometheus import prometheus_binary
from pyhpa.adapters.parse import milli

from .util import ROOT, wait_until


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = open(f"/proc/{pid}/stat").read().split()
    return stat[2] != "Z"


def test_up_serves_kubectl_and_pyhpa_run_and_stops_everything_on_sigterm(plane, tmp_path):
    # every binary: `up` builds what is missing first (and waits for a build the test run started in the
    # background), and --prometheus runs prometheus-adapter
    require_control_plane()
    if prometheus_binary() is None:
        pytest.fail("prometheus is not installed: .ci/run installs Debian's prometheus package")
    out = tmp_path / "up.log"
    with open(out, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "controlplane", "up", "--home", str(tmp_path / "home"),
                                 "--nodes", "3", "--prometheus"],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "is up at https://127.0.0.1:" in out.read_text() or proc.poll() is not None, timeout=180,
                   what="the control plane to say it is up")
        assert proc.poll() is None, out.read_text()
        kubeconfig = tmp_path / "home" / "admin.kubeconfig"
        assert f"export KUBECONFIG={kubeconfig}" in out.read_text()
        nodes = subprocess.run([str(bin_dir() / "kubectl"), "--kubeconfig", str(kubeconfig), "get", "nodes", "-o",
                                "name"], capture_output=True, text=True, timeout=60)
        assert nodes.stdout.split() == ["node/kwok-node-0", "node/kwok-node-1", "node/kwok-node-2"], nodes.stderr
        # a demo's load: pods annotated with KWOK's usage, through metrics-server (`kubectl top` has nothing for a
        # node without pods: metrics-server drops a node whose CPU counter is zero)
        kubectl = [str(bin_dir() / "kubectl"), "--kubeconfig", str(kubeconfig)]
        subprocess.run([*kubectl, "create", "deployment", "demo", "--image=registry.invalid/demo:1", "--replicas=3"],
                       check=True, capture_output=True, timeout=60)
        wait_until(lambda: subprocess.run([*kubectl, "get", "pods", "-l", "app=demo", "--no-headers"], capture_output=True,
                                          text=True, timeout=60).stdout.count("Running") == 3, what="3 running pods")
        subprocess.run([*kubectl, "annotate", "pods", "-l", "app=demo", "kwok.x-k8s.io/usage-cpu=250m"], check=True,
                       capture_output=True, timeout=60)
        top = wait_until(lambda: (r := subprocess.run([*kubectl, "top", "pods", "-l", "app=demo", "--no-headers"],
                                                      capture_output=True, text=True, timeout=60)).returncode == 0
                         and r.stdout.count("\n") == 3 and r.stdout, timeout=150,
                         what="kubectl top pods (metrics-server's scrapes)")
        assert all(abs(int(line.split()[1].rstrip("m")) - 250) <= 5 for line in top.splitlines()), top
        # --prometheus: Prometheus scrapes each node's /metrics/resource; the adapter's rule of its docs/config.md
        # serves container_cpu_usage_seconds_total's rate as the Pods metric cpu_usage (cores, as a quantity)
        assert "Prometheus: http://127.0.0.1:" in out.read_text()

        def cpu_usage() -> dict:
            r = subprocess.run([*kubectl, "get", "--raw", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/"
                                "pods/*/cpu_usage?labelSelector=app%3Ddemo"], capture_output=True, text=True,
                               timeout=60)
            items = json.loads(r.stdout).get("items", []) if r.returncode == 0 else []
            return {i["describedObject"]["name"]: milli(i["value"]) for i in items} if len(items) == 3 else {}
        # the rule's rate over 1 minute reaches 250m once a minute of samples at 250m lies inside its window
        wait_until(lambda: (u := cpu_usage()) and all(abs(v - 250) <= 10 for v in u.values()), timeout=300, every=5,
                   what="the Pods metric cpu_usage at 250m through prometheus-adapter")
        crds = subprocess.run([str(bin_dir() / "kubectl"), "--kubeconfig", str(kubeconfig), "get", "crd", "-o", "name"],
                              capture_output=True, text=True, timeout=60)
        assert "horizontalautoscalers.pyhpa.dev" in crds.stdout
        # the README's second command: pyhpa run with that kubeconfig (its default Lease namespace is there)
        run = subprocess.Popen([sys.executable, "-m", "pyhpa.cli.main", "run", "--kubeconfig", str(kubeconfig),
                                "--health-port", "-1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)
        lines = []
        for line in run.stdout:
            lines.append(line)
            if "caches synced" in line:
                break
        run.send_signal(signal.SIGTERM)
        rest, _ = run.communicate(timeout=60)
        assert run.returncode == 0, "".join(lines) + rest
        assert any("acquired lease pyhpa-system/pyhpa-controller" in line for line in lines), lines
        children = [int(p) for p in subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                                   text=True).stdout.split()]
        # etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, metrics-server, prometheus,
        # prometheus-adapter
        assert len(children) == 8
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    assert code == 0
    time.sleep(1)
    assert [p for p in children if _alive(p)] == []
    assert not (tmp_path / "home" / "etcd").exists()  # its data removed (etcd preallocates 64 MB)


def test_version_names_every_binary_s_version(plane):
    require_control_plane()  # every binary, helm and prometheus-adapter too
    out = subprocess.run([sys.executable, "-m", "controlplane", "version"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    said = dict(line.split(": ", 1) for line in out.stdout.splitlines())
    assert said["kube-apiserver"] == "Kubernetes v1.37.2"
    assert said["kube-scheduler"] == "Kubernetes v1.37.2"
    assert said["kubectl"].startswith("Client Version: v1.37.2")
    assert "0.8.0" in said["kwok"]
    assert "v0.9.0" in said["metrics-server"]
    assert said["prometheus-adapter"] == "sigs.k8s.io/prometheus-adapter v0.12.0"
    assert said["helm"].startswith("v4.3.1")
    assert set(said) == {"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd", "kwok",
                         "metrics-server", "prometheus-adapter", "helm"}
