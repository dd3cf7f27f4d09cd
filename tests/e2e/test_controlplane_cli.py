"""``python -m controlplane up``, the README's way to try pyhpa on a real control plane: it starts, says where,
serves kubectl and ``pyhpa run``, and SIGTERM stops every component it started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from controlplane import bin_dir

from .util import ROOT, wait_until


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = open(f"/proc/{pid}/stat").read().split()
    return stat[2] != "Z"


def test_up_serves_kubectl_and_pyhpa_run_and_stops_everything_on_sigterm(plane, tmp_path):
    out = tmp_path / "up.log"
    with open(out, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "controlplane", "up", "--home", str(tmp_path / "home")],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "is up at https://127.0.0.1:" in out.read_text() or proc.poll() is not None, timeout=180,
                   what="the control plane to say it is up")
        assert proc.poll() is None, out.read_text()
        kubeconfig = tmp_path / "home" / "admin.kubeconfig"
        assert f"export KUBECONFIG={kubeconfig}" in out.read_text()
        nodes = subprocess.run([str(bin_dir() / "kubectl"), "--kubeconfig", str(kubeconfig), "get", "nodes", "-o",
                                "name"], capture_output=True, text=True, timeout=60)
        assert nodes.stdout.strip() == "node/pyhpa-node", nodes.stderr
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
        assert len(children) == 3  # etcd, kube-apiserver, kube-controller-manager
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    assert code == 0
    time.sleep(1)
    assert [p for p in children if _alive(p)] == []
    assert not (tmp_path / "home" / "etcd").exists()  # its data removed (etcd preallocates 64 MB)
