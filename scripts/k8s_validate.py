#!/usr/bin/env python3
"""Validate rendered Kubernetes manifests for warden (docs/kubernetes.md).

    k8s_validate.py --crds DIR FILE...     (FILE: `kubectl kustomize` output; - is stdin)

Two layers, both refusing with the object, the field path and, where the
object came from a file, FILE:LINE:COLUMN:

1. Every object of a kind a CRD in DIR defines (agent-sandbox's Sandbox,
   SandboxTemplate, SandboxWarmPool, SandboxClaim) is checked against the
   openAPIV3Schema of the version it names, as the API server does with
   strict field validation: type, properties (an unknown field is refused
   unless the schema preserves unknown fields or has additionalProperties),
   required, items, enum, additionalProperties, anyOf,
   x-kubernetes-int-or-string, x-kubernetes-list-type (map keys and set
   items unique), pattern, minimum/maximum, minLength/maxLength and the
   int32/int64/date-time formats.  A CEL rule (x-kubernetes-validations)
   cannot be evaluated here and is refused rather than passed.
   The SandboxTemplate's schema embeds the whole pod template, so the pod
   spec is checked too.

2. warden's own rules for its pod (why each: docs/kubernetes.md): procMount
   Unmasked only with hostUsers false; nothing privileged, no host
   namespaces, host paths or host ports, no Unconfined seccomp, no mount
   of a volume the pod lacks; the only capability added is
   SYS_ADMIN, never beside allowPrivilegeEscalation false spelled as the
   API server refuses it; every container has cpu and memory limits; no
   service account token; and the network policies (a SandboxTemplate's
   networkPolicy and NetworkPolicy objects) reach nothing inside the
   cluster but DNS, and admit no other pod of the namespace.

Exit status: 0 valid, 1 a refusal (each printed on stderr), 125 bad input
(a CRD directory or file that cannot be read or parsed).
"""
import ipaddress
import os
import re
import sys
from datetime import datetime

import yaml

# libyaml's parser where python3-yaml has it: the CRDs are 17,000 lines
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Refusal(Exception):
    pass


# ------------------------------------------------------------ YAML with marks

def load_with_marks(text, name):
    """The documents of text, and for each a map from a field path (a tuple
    of keys and indices) to 'name:line:column' of that field."""
    docs = list(yaml.load_all(text, Loader=Loader))
    marks = []
    for node in yaml.compose_all(text, Loader=Loader):
        m = {}

        def walk(n, path):
            m[path] = f"{name}:{n.start_mark.line + 1}:{n.start_mark.column + 1}"
            if isinstance(n, yaml.MappingNode):
                for k, v in n.value:
                    walk(v, path + (k.value,))
                    # an unknown field is reported at its key
                    m[path + (k.value,)] = (
                        f"{name}:{k.start_mark.line + 1}:{k.start_mark.column + 1}")
            elif isinstance(n, yaml.SequenceNode):
                for i, v in enumerate(n.value):
                    walk(v, path + (i,))

        if node is not None:
            walk(node, ())
        marks.append(m)
    pairs = [(d, mk) for d, mk in zip(docs, marks) if d is not None]
    return pairs


def fmt_path(path):
    s = ""
    for p in path:
        s += f"[{p}]" if isinstance(p, int) else f".{p}"
    return s or "."


# ------------------------------------------------------------ the CRD schemas

def load_crds(directory):
    """{(group, version, kind): schema} for every served version."""
    out = {}
    try:
        names = sorted(os.listdir(directory))
    except OSError as e:
        raise OSError(f"--crds {directory}: {e.strerror}") from e
    for fn in names:
        if not fn.endswith((".yaml", ".yml")):
            continue
        path = os.path.join(directory, fn)
        with open(path, encoding="utf-8") as f:
            for doc in yaml.load_all(f, Loader=Loader):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                spec = doc["spec"]
                for v in spec["versions"]:
                    if v.get("served", True):
                        out[(spec["group"], v["name"], spec["names"]["kind"])] = \
                            v["schema"]["openAPIV3Schema"]
    if not out:
        raise OSError(f"--crds {directory}: no CustomResourceDefinition found")
    return out


# ------------------------------------------------ structural schema validation

_FORMATS_INT = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


def _type_ok(t, v):
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    raise Refusal(f"schema type {t!r} is not one this validator knows")


def _tname(v):
    return {dict: "object", list: "array", str: "string", bool: "boolean",
            int: "integer", float: "number", type(None): "null"}.get(type(v), "?")


def validate(schema, v, path, errs, root=False):
    """Append (path, message) to errs for each way v breaks schema."""
    if "x-kubernetes-validations" in schema:
        errs.append((path, "a CEL rule (x-kubernetes-validations) applies here and "
                     "this validator cannot evaluate it"))
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))):
            errs.append((path, f"must be an integer or a string, not {_tname(v)}"))
            return
    elif "type" in schema:
        if v is None and schema.get("nullable"):
            return
        if not _type_ok(schema["type"], v):
            errs.append((path, f"must be {schema['type']}, not {_tname(v)}"))
            return
    if "anyOf" in schema:
        if not any(_no_errors(s, v, path) for s in schema["anyOf"]):
            errs.append((path, "matches none of the schema's anyOf branches"))
    if "enum" in schema and v not in schema["enum"]:
        allowed = ", ".join(repr(e) for e in schema["enum"])
        errs.append((path, f"{v!r} is not one of {allowed}"))
    if isinstance(v, str):
        if "pattern" in schema and not re.search(schema["pattern"], v):
            errs.append((path, f"{v!r} does not match {schema['pattern']}"))
        if "maxLength" in schema and len(v) > schema["maxLength"]:
            errs.append((path, f"longer than {schema['maxLength']}"))
        if "minLength" in schema and len(v) < schema["minLength"]:
            errs.append((path, f"shorter than {schema['minLength']}"))
        if schema.get("format") == "date-time":
            try:
                datetime.fromisoformat(v.replace("Z", "+00:00"))
            except ValueError:
                errs.append((path, f"{v!r} is not an RFC 3339 date-time"))
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if "minimum" in schema and v < schema["minimum"]:
            errs.append((path, f"{v} is below the minimum {schema['minimum']}"))
        if "maximum" in schema and v > schema["maximum"]:
            errs.append((path, f"{v} is above the maximum {schema['maximum']}"))
        rng = _FORMATS_INT.get(schema.get("format"))
        if rng and not rng[0] <= v <= rng[1]:
            errs.append((path, f"{v} does not fit {schema['format']}"))
    if isinstance(v, dict):
        _validate_object(schema, v, path, errs, root)
    if isinstance(v, list):
        items = schema.get("items")
        for i, e in enumerate(v):
            if items is not None:
                validate(items, e, path + (i,), errs)
        _validate_list_type(schema, v, path, errs)


def _no_errors(schema, v, path):
    e = []
    validate(schema, v, path, e)
    return not e


def _validate_object(schema, v, path, errs, root):
    props = schema.get("properties", {})
    for r in schema.get("required", []):
        if r not in v:
            errs.append((path, f"required field '{r}' is missing"))
    addl = schema.get("additionalProperties")
    preserve = schema.get("x-kubernetes-preserve-unknown-fields")
    for k, e in v.items():
        if root and k == "metadata":
            _validate_meta(e, path + (k,), errs)
        elif k in props:
            validate(props[k], e, path + (k,), errs)
        elif isinstance(addl, dict):
            validate(addl, e, path + (k,), errs)
        elif addl is True or preserve:
            pass
        else:
            # The API server's strict field validation refuses it; a
            # lenient one drops it silently, which is worse: a setting the
            # author meant (a misspelt securityContext key) would vanish.
            errs.append((path + (k,), "unknown field"))


def _validate_meta(m, path, errs):
    """ObjectMeta, which a CRD's schema leaves to the API server."""
    if not isinstance(m, dict):
        errs.append((path, f"must be object, not {_tname(m)}"))
        return
    name = m.get("name")
    if not isinstance(name, str) or not re.fullmatch(
            r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", name) \
            or len(name) > 253:
        errs.append((path + ("name",), "required, a DNS subdomain name"))
    for k in ("labels", "annotations"):
        mp = m.get(k, {})
        if not isinstance(mp, dict) or not all(
                isinstance(a, str) and isinstance(b, str) for a, b in mp.items()):
            errs.append((path + (k,), "must be a map of strings to strings"))


def _validate_list_type(schema, v, path, errs):
    lt = schema.get("x-kubernetes-list-type")
    if lt == "map":
        keys = schema.get("x-kubernetes-list-map-keys", [])
        seen = {}
        for i, e in enumerate(v):
            if not isinstance(e, dict):
                continue
            k = tuple(repr(e.get(key)) for key in keys)
            if k in seen:
                errs.append((path + (i,), f"duplicate entry for key {'/'.join(keys)} "
                             f"(first at index {seen[k]})"))
            seen.setdefault(k, i)
    elif lt == "set":
        for i, e in enumerate(v):
            if e in v[:i]:
                errs.append((path + (i,), "duplicate entry in a set"))


# ---------------------------------------------------------- warden's own rules

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")

# Where a sandbox could reach the cluster or the node by address: private
# (RFC 1918, ULA), shared (CGNAT, where some clusters put pods), loopback,
# link-local (the cloud metadata service), "this network", multicast and
# reserved, IPv4 inside IPv6 (mapped, NAT64).
INTERNAL = [ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
    "172.16.0.0/12", "192.168.0.0/16", "224.0.0.0/4", "240.0.0.0/4",
    "::/128", "::1/128", "::ffff:0:0/96", "64:ff9b::/96", "fc00::/7", "fe80::/10",
    "ff00::/8")]


def pod_specs(obj):
    """(path, pod spec) of every pod template in obj."""
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    if kind in ("SandboxTemplate", "Sandbox"):
        pt = spec.get("podTemplate") or {}
        yield ("spec", "podTemplate", "spec"), pt.get("spec") or {}
    elif kind == "Pod":
        yield ("spec",), spec
    elif kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        yield ("spec", "template", "spec"), (spec.get("template") or {}).get("spec") or {}


def check_pod(ps, base, errs, claim_names=()):
    if not isinstance(ps, dict):
        return
    # A node's directory in a pod that runs a model's commands is the node
    # handed over; a host port is the node's network.
    vols = set(claim_names)
    for i, vol in enumerate(ps.get("volumes") or []):
        if isinstance(vol, dict):
            vols.add(vol.get("name"))
            if "hostPath" in vol:
                errs.append((base + ("volumes", i, "hostPath"), "a hostPath volume"))
    # Unmasked /proc shows the node's /proc/sys and friends writable to the
    # pod's root; only a user namespace makes that root nobody on the node
    # (the API server refuses it otherwise too).
    host_users_false = ps.get("hostUsers") is False
    for k in ("hostNetwork", "hostPID", "hostIPC"):
        if ps.get(k):
            errs.append((base + (k,), "a host namespace: the pod would share the node's"))
    if ps.get("automountServiceAccountToken") is not False:
        errs.append((base + ("automountServiceAccountToken",),
                     "must be false: a pod that runs a model's commands holds no "
                     "Kubernetes credentials"))
    psc = ps.get("securityContext") or {}
    if (psc.get("seccompProfile") or {}).get("type") == "Unconfined":
        errs.append((base + ("securityContext", "seccompProfile", "type"),
                     "Unconfined seccomp"))
    for lst in CONTAINER_LISTS:
        for i, c in enumerate(ps.get(lst) or []):
            if not isinstance(c, dict):
                continue
            cp = base + (lst, i)
            sc = c.get("securityContext") or {}
            scp = cp + ("securityContext",)
            if sc.get("procMount") == "Unmasked" and not host_users_false:
                errs.append((scp + ("procMount",),
                             "procMount Unmasked without hostUsers: false"))
            if sc.get("privileged") is True:
                errs.append((scp + ("privileged",), "privileged: true"))
            if (sc.get("seccompProfile") or {}).get("type") == "Unconfined":
                errs.append((scp + ("seccompProfile", "type"), "Unconfined seccomp"))
            add = (sc.get("capabilities") or {}).get("add") or []
            for j, cap in enumerate(add):
                if cap not in ("SYS_ADMIN", "CAP_SYS_ADMIN"):
                    errs.append((scp + ("capabilities", "add", j),
                                 f"capability {cap!r}: SYS_ADMIN is the only one added"))
            # The API server's own rule (ValidateSecurityContext): refused
            # there, so refused here before a cluster sees it.
            if sc.get("allowPrivilegeEscalation") is False and "CAP_SYS_ADMIN" in add:
                errs.append((scp + ("allowPrivilegeEscalation",),
                             "allowPrivilegeEscalation false beside capabilities.add "
                             "CAP_SYS_ADMIN is refused by the API server"))
            for j, port in enumerate(c.get("ports") or []):
                if isinstance(port, dict) and port.get("hostPort"):
                    errs.append((cp + ("ports", j, "hostPort"), "a host port"))
            # A mount of a volume the pod does not have fails at pod
            # creation, in the controller, long after this check.
            for j, vm in enumerate(c.get("volumeMounts") or []):
                if isinstance(vm, dict) and vm.get("name") not in vols:
                    errs.append((cp + ("volumeMounts", j, "name"),
                                 f"no volume {vm.get('name')!r} in the pod or its "
                                 f"volumeClaimTemplates"))
            if lst == "ephemeralContainers":
                continue
            lim = (c.get("resources") or {}).get("limits") or {}
            for r in ("cpu", "memory"):
                if r not in lim:
                    errs.append((cp + ("resources", "limits"),
                                 f"container {c.get('name')!r} has no {r} limit"))


def _nets(block, path, errs):
    try:
        allowed = ipaddress.ip_network(block["cidr"])
        excepts = [ipaddress.ip_network(x) for x in block.get("except") or []]
    except (KeyError, TypeError, ValueError) as e:
        errs.append((path, f"ipBlock: {e}"))
        return
    for x in excepts:
        if x.version != allowed.version or not x.subnet_of(allowed):
            errs.append((path, f"except {x} is not inside {allowed}"))
            return
    for n in INTERNAL:
        if n.version != allowed.version or not n.overlaps(allowed):
            continue
        inside = n if n.subnet_of(allowed) else allowed
        if not any(inside.subnet_of(x) for x in excepts):
            errs.append((path, f"egress to {allowed} reaches {inside}, inside the "
                         f"cluster or the node, not cut out by 'except'"))


def _is_dns(rule):
    ports = rule.get("ports") or []
    return ports and all(str(p.get("port")) == "53" and p.get("endPort") is None
                         for p in ports)


def check_netpol(np, base, errs):
    """A network policy's rules (NetworkPolicy spec or a template's field)."""
    for i, rule in enumerate(np.get("egress") or []):
        rp = base + ("egress", i)
        peers = rule.get("to")
        if not peers:
            errs.append((rp, "egress to every destination (no 'to'), the API server "
                         "and other sandboxes included"))
            continue
        for j, peer in enumerate(peers):
            pp = rp + ("to", j)
            if "ipBlock" in peer:
                _nets(peer["ipBlock"], pp + ("ipBlock",), errs)
            ns = peer.get("namespaceSelector")
            if "podSelector" in peer or ns is not None:
                # A selector names pods in the cluster: only DNS in
                # kube-system, port 53 only.
                name = ((ns or {}).get("matchLabels") or {}).get(
                    "kubernetes.io/metadata.name")
                if name != "kube-system" or not _is_dns(rule):
                    errs.append((pp, "egress to pods in the cluster other than DNS "
                                 "(kube-system, port 53)"))
    for i, rule in enumerate(np.get("ingress") or []):
        rp = base + ("ingress", i)
        peers = rule.get("from")
        if not peers:
            errs.append((rp, "ingress from everywhere (no 'from')"))
            continue
        for j, peer in enumerate(peers):
            pp = rp + ("from", j)
            if "ipBlock" in peer:
                errs.append((pp, "ingress by address: other sandboxes are addresses "
                             "too; name the router by its labels"))
            ps = peer.get("podSelector")
            ns = peer.get("namespaceSelector")
            if ns is None or not (ns.get("matchLabels") or ns.get("matchExpressions")) \
                    or not ps or not (ps.get("matchLabels") or ps.get("matchExpressions")):
                errs.append((pp, "ingress from a whole namespace or every pod of one "
                             "(other sandboxes): name the router's namespace and pods"))


def check_policy(obj, errs):
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    claims = [((t or {}).get("metadata") or {}).get("name")
              for t in spec.get("volumeClaimTemplates") or [] if isinstance(t, dict)]
    for base, ps in pod_specs(obj):
        check_pod(ps, base, errs, claims)
    if kind == "SandboxTemplate":
        if spec.get("networkPolicyManagement") == "Unmanaged" or not spec.get("networkPolicy"):
            errs.append((("spec", "networkPolicy"), "the template carries no managed "
                         "network policy: its pods would reach the whole cluster"))
        else:
            check_netpol(spec["networkPolicy"], ("spec", "networkPolicy"), errs)
    if kind == "NetworkPolicy":
        check_netpol(spec, ("spec",), errs)


# ------------------------------------------------------------------ the driver

def check_object(obj, marks, crds, name="-"):
    """Refusals of obj as strings ('' when valid)."""
    errs = []
    api = obj.get("apiVersion", "")
    group, _, version = api.rpartition("/")
    kind = obj.get("kind")
    schema = crds.get((group, version, kind))
    if schema is None and any(k[0] == group and k[2] == kind for k in crds):
        errs.append((("apiVersion",), f"{api} is not a served version of {kind}"))
    elif schema is not None:
        validate(schema, obj, (), errs, root=True)
    check_policy(obj, errs)
    who = f"{kind}/{(obj.get('metadata') or {}).get('name', '?')}"
    out = []
    for path, msg in errs:
        # the nearest position the file has (a missing field has none)
        p = path
        while p and p not in marks:
            p = p[:-1]
        where = marks.get(p, name)
        out.append(f"{where}: {who} {fmt_path(path)}: {msg}")
    return out


def main(argv):
    crds_dir, files = None, []
    i = 1
    while i < len(argv):
        if argv[i] == "--crds" and i + 1 < len(argv):
            crds_dir = argv[i + 1]
            i += 2
        elif argv[i].startswith("-") and argv[i] != "-":
            print(f"k8s_validate: unknown option '{argv[i]}'", file=sys.stderr)
            return 125
        else:
            files.append(argv[i])
            i += 1
    if not crds_dir or not files:
        print("usage: k8s_validate.py --crds DIR FILE...", file=sys.stderr)
        return 125
    try:
        crds = load_crds(crds_dir)
    except (OSError, yaml.YAMLError, KeyError, TypeError) as e:
        print(f"k8s_validate: {e}", file=sys.stderr)
        return 125
    bad = 0
    for fn in files:
        try:
            text = sys.stdin.read() if fn == "-" else open(fn, encoding="utf-8").read()
            pairs = load_with_marks(text, fn)
        except (OSError, UnicodeDecodeError) as e:
            print(f"k8s_validate: {fn}: {e}", file=sys.stderr)
            return 125
        except yaml.MarkedYAMLError as e:
            m = e.problem_mark
            where = f"{fn}:{m.line + 1}:{m.column + 1}" if m else fn
            print(f"k8s_validate: {where}: {e.problem}", file=sys.stderr)
            return 125
        for obj, marks in pairs:
            if not isinstance(obj, dict):
                print(f"k8s_validate: {fn}: a document is not an object", file=sys.stderr)
                return 125
            for line in check_object(obj, marks, crds, fn):
                print(line, file=sys.stderr)
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
