"""The control plane's certificates and keys, made with ``cryptography`` (as kubeadm lays them out).

``make_pki(folder, service_ip)`` writes, once per folder:

* ``ca.crt``/``ca.key``: the cluster CA (clients and serving certificates);
* ``apiserver.crt``/``.key``: kube-apiserver's serving certificate, SANs 127.0.0.1, ``service_ip`` (the first
  address of the service CIDR), localhost and the ``kubernetes.default.svc...`` names;
* ``admin.crt``/``.key`` (CN ``kubernetes-admin``, O ``system:masters``) and ``controller-manager.crt``/``.key``
  (CN ``system:kube-controller-manager``): client certificates;
* ``sa.key``/``sa.pub``: the service-account token signing key pair (RSA 2048);
* ``front-proxy-ca.crt``/``.key`` and ``front-proxy-client.crt``/``.key`` (CN ``front-proxy-client``): the
  aggregation layer's client identity towards aggregated API servers;
* ``metrics.crt``/``.key``: the metrics fixture's serving certificate for ``<service>.<namespace>.svc``.

Keys are ECDSA P-256 (fast to make) except the service-account key, RSA as kubeadm's. Certificates are valid
for ten years from a fixed hour before now, so a folder reused across runs stays valid.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

METRICS_SERVICE = ("kube-system", "pyhpa-metrics-fixture")
"""(namespace, name) of the Service the metrics fixture's APIServices point at."""
METRICS_SERVER_SERVICE = ("kube-system", "metrics-server")
"""(namespace, name) of metrics-server's Service (as its manifests name it)."""
ADAPTER_SERVICE = ("monitoring", "prometheus-adapter")
"""(namespace, name) of prometheus-adapter's Service (as its manifests name it)."""
#: client certificates: stem -> (common name, organization); a service account's user name (``CN``) is what RBAC
#: bindings of that ServiceAccount match, so metrics-server and prometheus-adapter run with their manifests' RBAC
CLIENTS = {
    "admin": ("kubernetes-admin", "system:masters"),
    "controller-manager": ("system:kube-controller-manager", None),
    "scheduler": ("system:kube-scheduler", None),
    "metrics-server-client": ("system:serviceaccount:kube-system:metrics-server", "system:serviceaccounts"),
    "adapter-client": ("system:serviceaccount:monitoring:prometheus-adapter", "system:serviceaccounts"),
}


@dataclass(frozen=True)
class Pki:
    """Paths of the files ``make_pki`` wrote."""

    folder: Path

    def __getattr__(self, name: str) -> Path:  # ca_crt -> folder/ca.crt, front_proxy_ca_key -> front-proxy-ca.key
        stem, _, ext = name.rpartition("_")
        if not stem or ext not in ("crt", "key", "pub"):
            raise AttributeError(name)
        return self.folder / f"{stem.replace('_', '-')}.{ext}"


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _write_key(path: Path, key) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _cert(subject: x509.Name, key, issuer: x509.Name, issuer_key, *, ca: bool = False,
          server: bool = False, client: bool = False, sans: tuple[str, ...] = ()) -> x509.Certificate:
    start = dt.datetime.now(dt.timezone.utc).replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=1)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(start)
               .not_valid_after(start + dt.timedelta(days=3650))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False), critical=True)
    else:
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + ([ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    if sans:
        names = []
        for san in sans:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(san)))
            except ValueError:
                names.append(x509.DNSName(san))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pair(folder: Path, stem: str, cert: x509.Certificate, key) -> None:
    _write_key(folder / f"{stem}.key", key)
    (folder / f"{stem}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def make_pki(folder: Path, service_ip: str) -> Pki:
    """Write the certificates and keys into ``folder`` (created) unless ``folder/done`` says they are there.

    ``service_ip``: the first address of the service CIDR, a SAN of the API server's certificate (in-cluster
    clients reach the API server at ``kubernetes.default``'s cluster IP). Returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    pki = Pki(folder)
    stamp = folder / "done"
    if stamp.exists() and stamp.read_text() == service_ip and all((folder / f"{c}.crt").exists() for c in CLIENTS):
        return pki
    new = lambda: ec.generate_private_key(ec.SECP256R1())  # noqa: E731
    ca_key = new()
    ca_name = _name("pyhpa-control-plane-ca")
    _pair(folder, "ca", _cert(ca_name, ca_key, ca_name, ca_key, ca=True), ca_key)
    key = new()
    _pair(folder, "apiserver", _cert(_name("kube-apiserver"), key, ca_name, ca_key, server=True, sans=(
        "127.0.0.1", service_ip, "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local")), key)
    for stem, (cn, org) in CLIENTS.items():
        key = new()
        _pair(folder, stem, _cert(_name(cn, org), key, ca_name, ca_key, client=True), key)
    for stem, (ns, svc) in (("metrics", METRICS_SERVICE), ("metrics-server", METRICS_SERVER_SERVICE),
                            ("adapter", ADAPTER_SERVICE)):
        key = new()
        _pair(folder, stem, _cert(_name(f"{svc}.{ns}.svc"), key, ca_name, ca_key, server=True,
                                  sans=(f"{svc}.{ns}.svc", f"{svc}.{ns}.svc.cluster.local")), key)
    key = new()  # KWOK's kubelet endpoint (/metrics/resource per node): metrics-server scrapes it
    _pair(folder, "kwok-serving", _cert(_name("kwok"), key, ca_name, ca_key, server=True, sans=("127.0.0.1",)), key)
    fp_key = new()
    fp_name = _name("pyhpa-front-proxy-ca")
    _pair(folder, "front-proxy-ca", _cert(fp_name, fp_key, fp_name, fp_key, ca=True), fp_key)
    key = new()
    _pair(folder, "front-proxy-client", _cert(_name("front-proxy-client"), key, fp_name, fp_key, client=True), key)
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(folder / "sa.key", sa_key)
    (folder / "sa.pub").write_bytes(sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    stamp.write_text(service_ip)
    return pki
