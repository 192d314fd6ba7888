#!/usr/bin/env python3
"""deploy/kubernetes renders with `kubectl kustomize` (the base and the
gVisor overlay) and every rendered object passes scripts/k8s_validate.py:
agent-sandbox's CRD schemas (the pod template included) and warden's rules
for its pod.  Then broken copies of the same objects, one fault each, must
each be refused with the fault named: the validator can fail.

  k8s_manifests.py SOURCE_ROOT

The CRDs are read from SOURCE_ROOT/../shared/k8s/agent-sandbox-crds (or
the nearest such directory further up, or $WD_K8S_CRDS).  Exit 0, 1, or
77 when the CRDs (test data) are absent, or kubectl is (WD_MUST_WORK=1
makes a missing kubectl a failure).
"""
import copy
import os
import shutil
import subprocess
import sys
import tempfile

src = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(src, "scripts"))
import k8s_validate as kv  # noqa: E402

MUST_WORK = os.environ.get("WD_MUST_WORK") == "1"
failures = 0
n = 0


def tap(ok, what):
    global failures, n
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}", flush=True)
    if not ok:
        failures += 1


def skip(why):
    if MUST_WORK:
        print(f"Bail out! {why} (WD_MUST_WORK=1: a skip is a failure)")
        sys.exit(1)
    print(f"1..0 # SKIP {why}")
    sys.exit(77)


def find_crds():
    """$WD_K8S_CRDS, else the nearest shared/k8s/agent-sandbox-crds beside
    the source tree or one of its parents (the project keeps that test
    data at ../shared/k8s; a clone may sit one level deeper)."""
    if os.environ.get("WD_K8S_CRDS"):
        return os.environ["WD_K8S_CRDS"]
    d = os.path.dirname(os.path.abspath(src))
    while True:
        c = os.path.join(d, "shared", "k8s", "agent-sandbox-crds")
        if os.path.isdir(c):
            return c
        if d == os.path.dirname(d):
            return os.path.join(os.path.dirname(src), "shared", "k8s", "agent-sandbox-crds")
        d = os.path.dirname(d)


crds_dir = find_crds()
if not os.path.isdir(crds_dir):
    # test data, not a capability of the machine: absent, the test skips
    # (77) even under WD_MUST_WORK=1
    print(f"1..0 # SKIP no agent-sandbox CRDs at {crds_dir} or above the source tree "
          "(set WD_K8S_CRDS)")
    sys.exit(77)
kubectl = shutil.which("kubectl")
if not kubectl:
    skip("no kubectl")
crds = kv.load_crds(crds_dir)

# ---------------------------------------------------------------- renderings
rendered = {}
for rel in ("deploy/kubernetes", "deploy/kubernetes/overlays/gvisor"):
    p = subprocess.run([kubectl, "kustomize", os.path.join(src, rel)],
                       capture_output=True, text=True)
    tap(p.returncode == 0, f"kubectl kustomize {rel} renders")
    if p.returncode != 0:
        print("# " + p.stderr.replace("\n", "\n# "))
        continue
    rendered[rel] = p.stdout
    objs = kv.load_with_marks(p.stdout, rel)
    kinds = sorted({o["kind"] for o, _ in objs})
    for o, marks in objs:
        refusals = kv.check_object(o, marks, crds, rel)
        for r in refusals:
            print(f"# {r}")
        tap(not refusals, f"{rel}: {o['kind']}/{o['metadata']['name']} is valid")
    want = {"Namespace", "NetworkPolicy", "SandboxClaim", "SandboxTemplate",
            "SandboxWarmPool"}
    tap(want <= set(kinds), f"{rel}: renders {sorted(want)} (got {kinds})")
    # every object of agent-sandbox's kinds was checked against a schema
    for o, _ in objs:
        g, _, v = o["apiVersion"].rpartition("/")
        if g.endswith("agents.x-k8s.io"):
            tap((g, v, o["kind"]) in crds, f"{rel}: {o['kind']} {o['apiVersion']} has a CRD")

base = rendered.get("deploy/kubernetes")
gv = rendered.get("deploy/kubernetes/overlays/gvisor")
if gv:
    objs = [o for o, _ in kv.load_with_marks(gv, "gvisor")]
    rc = [o for o in objs if o["kind"] == "RuntimeClass"]
    tmpl = [o for o in objs if o["kind"] == "SandboxTemplate"]
    tap(len(rc) == 1 and rc[0]["handler"] == "runsc"
        and tmpl and tmpl[0]["spec"]["podTemplate"]["spec"].get("runtimeClassName")
        == rc[0]["metadata"]["name"],
        "gvisor overlay: a runsc RuntimeClass, and the template's pods use it")
if not base:
    print(f"1..{n}")
    sys.exit(1)

# ----------------------------------------------------------- broken copies
objs = {o["kind"]: o for o, _ in kv.load_with_marks(base, "base")}
tmpl = objs["SandboxTemplate"]


def pod(o):
    return o["spec"]["podTemplate"]["spec"]


def ctr(o):
    return pod(o)["containers"][0]


def refused(kind, mutate, expect, what):
    o = copy.deepcopy(objs[kind])
    mutate(o)
    refusals = kv.check_object(o, {}, crds, "mutated")
    hit = [r for r in refusals if expect in r]
    if not hit:
        print(f"# expected a refusal containing {expect!r}; got {refusals}")
    tap(bool(hit), f"refused: {what}")


def setp(path, value):
    def f(o):
        d = o
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
    return f


refused("SandboxWarmPool", setp(["spec", "replicas"], "two"),
        ".spec.replicas: must be integer, not string", "a wrong type (replicas: \"two\")")
refused("SandboxWarmPool", setp(["spec", "updateStrategy", "type"], "Sometimes"),
        ".spec.updateStrategy.type: 'Sometimes' is not one of", "a value outside an enum")
refused("SandboxTemplate",
        lambda o: ctr(o)["securityContext"].__setitem__("privilegd", True),
        "securityContext.privilegd: unknown field",
        "an unknown field where the schema lists the fields (a misspelt key)")
refused("SandboxTemplate", lambda o: pod(o).__setitem__("containers", [{"image": "warden"}]),
        "required field 'name' is missing", "a container without its required name")
refused("SandboxTemplate", lambda o: pod(o).pop("hostUsers"),
        "procMount Unmasked without hostUsers: false",
        "procMount Unmasked without hostUsers: false")
refused("SandboxTemplate", lambda o: pod(o).__setitem__("hostUsers", True),
        "procMount Unmasked without hostUsers: false", "procMount Unmasked with hostUsers: true")
refused("SandboxTemplate", lambda o: ctr(o)["securityContext"].__setitem__("privileged", True),
        "privileged: true", "a privileged container")
refused("SandboxTemplate", lambda o: ctr(o)["resources"].pop("limits"),
        "has no memory limit", "a container without limits")
refused("SandboxTemplate",
        lambda o: ctr(o)["securityContext"]["capabilities"].__setitem__(
            "add", ["CAP_SYS_ADMIN"]),
        "refused by the API server", "allowPrivilegeEscalation false beside CAP_SYS_ADMIN")
refused("SandboxTemplate",
        lambda o: ctr(o)["securityContext"]["capabilities"]["add"].append("NET_ADMIN"),
        "SYS_ADMIN is the only one added", "a second added capability")
refused("SandboxTemplate", lambda o: pod(o).__setitem__("hostNetwork", True),
        "a host namespace", "hostNetwork")
refused("SandboxTemplate",
        lambda o: pod(o)["volumes"].append({"name": "node", "hostPath": {"path": "/"}}),
        "a hostPath volume", "a hostPath volume")
refused("SandboxTemplate", lambda o: ctr(o)["ports"][0].__setitem__("hostPort", 8765),
        "a host port", "a host port")
refused("SandboxTemplate", lambda o: o["spec"]["volumeClaimTemplates"][0]["metadata"].__setitem__(
        "name", "data"), "no volume 'state'", "a mount of a volume the pod lacks")
refused("SandboxTemplate", lambda o: pod(o).pop("automountServiceAccountToken"),
        "no Kubernetes credentials", "a service account token mounted")
refused("SandboxTemplate",
        lambda o: o["spec"]["networkPolicy"]["egress"][1]["to"][0]["ipBlock"].pop("except"),
        "reaches 10.0.0.0/8", "egress to 0.0.0.0/0 with nothing cut out")
refused("SandboxTemplate",
        lambda o: o["spec"]["networkPolicy"]["egress"][1]["to"][0]["ipBlock"]["except"].remove(
            "169.254.0.0/16"),
        "reaches 169.254.0.0/16", "egress to the cloud metadata range")
refused("SandboxTemplate",
        lambda o: o["spec"]["networkPolicy"]["egress"].append({"ports": [{"port": 443}]}),
        "no 'to'", "egress to every destination")
refused("SandboxTemplate",
        lambda o: o["spec"]["networkPolicy"]["egress"][0]["ports"].append({"port": 443}),
        "other than DNS", "egress to kube-system beyond port 53")
refused("SandboxTemplate",
        lambda o: o["spec"]["networkPolicy"]["ingress"][0]["from"].append({"podSelector": {}}),
        "other sandboxes", "ingress from every pod of the namespace")
refused("SandboxTemplate", lambda o: o["spec"].pop("networkPolicy"),
        "carries no managed network policy", "a template without its network policy")
refused("SandboxTemplate", setp(["spec", "networkPolicyManagement"], "Unmanaged"),
        "carries no managed network policy", "an unmanaged network policy")
refused("NetworkPolicy", setp(["spec", "egress"], [{"to": [{"namespaceSelector": {}}]}]),
        "other than DNS", "a NetworkPolicy letting pods reach every namespace")
refused("SandboxClaim", setp(["apiVersion"], "extensions.agents.x-k8s.io/v9"),
        "is not a served version", "a version no CRD serves")

# ------------------------------------------------- the Localhost seccomp profile
# The template names a profile this repository ships; it admits what the
# jail takes to build a sandbox and refuses what a sandbox is refused
# (run-doctor_pod runs warden under it).
import json  # noqa: E402
sp = pod(tmpl).get("securityContext", {}).get("seccompProfile", {})
pfile = os.path.join(src, "deploy", "kubernetes", "seccomp", sp.get("localhostProfile", "-"))
tap(sp.get("type") == "Localhost" and os.path.isfile(pfile),
    f"the template's Localhost profile {sp.get('localhostProfile')!r} is shipped")
try:
    prof = json.load(open(pfile))
except (OSError, ValueError) as e:
    prof = {}
    print(f"# {pfile}: {e}")
denied = {n for r in prof.get("syscalls", []) if r.get("action") == "SCMP_ACT_ERRNO"
          for n in r.get("names", [])}
needed = {"clone", "clone3", "unshare", "setns", "mount", "umount2", "pivot_root", "open_tree",
          "move_mount", "mount_setattr", "fsopen", "fsconfig", "fsmount", "seccomp",
          "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"}
tap(prof.get("defaultAction") == "SCMP_ACT_ALLOW" and not (denied & needed),
    f"the profile refuses none of what the jail needs (refused: {sorted(denied & needed)})")
tap({"ptrace", "bpf", "keyctl", "kexec_load", "init_module", "userfaultfd",
     "io_uring_setup", "perf_event_open"} <= denied,
    "the profile refuses ptrace, bpf, keyctl, kexec, modules, userfaultfd, io_uring, perf")
tap(set(prof.get("architectures", [])) == {"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"},
    "the profile admits no 32-bit ABI (IA-32, x32, arm)")

# --------------------------------------------- the command line, and bad input
v = os.path.join(src, "scripts", "k8s_validate.py")
with tempfile.TemporaryDirectory() as d:
    good = os.path.join(d, "good.yaml")
    with open(good, "w") as f:
        f.write(base)
    p = subprocess.run([sys.executable, v, "--crds", crds_dir, good],
                       capture_output=True, text=True)
    tap(p.returncode == 0 and not p.stderr, "k8s_validate.py passes the rendering (exit 0)")
    # A misspelt key in the file: refused at its FILE:LINE:COLUMN.
    lines = base.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip() == "procMount: Unmasked")
    col = len(lines[at]) - len(lines[at].lstrip())
    lines[at] = lines[at].replace("procMount:", "procMounts:")
    bad = os.path.join(d, "bad.yaml")
    with open(bad, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = subprocess.run([sys.executable, v, "--crds", crds_dir, bad],
                       capture_output=True, text=True)
    tap(p.returncode == 1 and f"{bad}:{at + 1}:{col + 1}: SandboxTemplate/warden "
        ".spec.podTemplate.spec.containers[0].securityContext.procMounts: unknown field"
        in p.stderr, f"a misspelt key is refused at FILE:LINE:COLUMN (exit {p.returncode})")
    if p.returncode != 1:
        print("# " + p.stderr)
    broken = os.path.join(d, "broken.yaml")
    with open(broken, "w") as f:
        f.write("kind: Namespace\nmetadata: {name: [\n")
    p = subprocess.run([sys.executable, v, "--crds", crds_dir, broken],
                       capture_output=True, text=True)
    tap(p.returncode == 125 and f"{broken}:3:1" in p.stderr,
        f"unparsable YAML: exit 125 naming FILE:LINE:COLUMN ({p.stderr.strip()})")
    empty = os.path.join(d, "empty")
    os.mkdir(empty)
    p = subprocess.run([sys.executable, v, "--crds", empty, good],
                       capture_output=True, text=True)
    tap(p.returncode == 125 and "no CustomResourceDefinition" in p.stderr,
        "a --crds directory without CRDs: exit 125 naming it")

print(f"1..{n}")
sys.exit(1 if failures else 0)
