"""An on-call SRE / incident-response agent world: an engineer reports an incident, the agent
investigates with observability and operations tools.

The user (an engineer) reports an incident ("checkout latency p99 is 4s since 14:10,
payments-api", "error rate spiking on auth-service in eu-west", "orders-worker pods are pegged
at 100% CPU"). Three kinds of task: a latency incident, an error-rate incident and a capacity
(saturation) incident. The agent has nine tools in OpenAI ``tool_calls`` format with JSON
arguments: ``list_alerts(service)``, ``query_metrics(service, metric, window)``,
``search_logs(service, query, window)``, ``get_deploys(service)``,
``describe_pod(service, pod)``, ``rollback(service, version)``, ``restart(service)``,
``scale(service, replicas)`` and ``post_status(channel, text)``; results are JSON or plain
text, failures are observations starting ``Error:`` (a misspelt service name, a malformed time
range, an unknown metric, a pod that does not exist, permission denied on a namespace), after
which the agent fixes the call and makes it again with the same tool.

Seven planted strategies; call counts overlap (0, 1-3, 2-6, 2-6, 2-4, 4-7, 1-3 calls with the
optional steps; every failed call adds one more, its corrected repeat):

===================  ======================================================================
``advise``           no tool: general advice on what to check and what to try
``restart_blind``    restart the service straight away
``metrics_then_act`` query one to three metrics, then act on what they show: ``scale`` when
                     the service is saturated (always on a capacity incident, half the time
                     on a latency one), else ``restart``
``log_dive``         two to four ``search_logs`` calls, each query refined from the last
                     (broad errors, then the exception seen, then one trace id); no action,
                     the answer names the root cause found
``deploy_rollback``  ``get_deploys``, then ``rollback`` to the release before the latest
``pod_triage``       ``list_alerts``, ``describe_pod`` on two to four pods, then ``scale`` if
                     a pod was OOM-killed, else ``restart``
``escalate``         ``post_status`` to the incident channel and, half the time, a page to
                     the on-call channel; nothing is changed
===================  ======================================================================

Optional steps, each at a fixed rate independent of the arm and of the task: a ``list_alerts``
check first (30%, every tool-using strategy but ``pod_triage``, which starts with it anyway)
and a ``post_status`` update to the incident channel at the end (35%, every tool-using strategy
but ``escalate``, which is made of it). Failures (15% of every call, each followed by the
corrected call of the same tool) occur inside every strategy that calls a tool; they are
execution, not strategy. Service names, metrics, windows, queries, pods, versions and the
agent's words vary inside every strategy.

The strategy mixture depends mildly on the kind of task, the same way in both arms: the arm's
weight of ``deploy_rollback`` is multiplied by 1.6 on an error-rate incident and the weight of
``pod_triage`` by 1.5 on a capacity incident (:data:`KIND_TILT`); every strategy is used on
every kind of task. The ``rl`` arm differs from ``base`` only in its mixture; success depends
only on the strategy (random within it). ``planted["shares"]`` are the mixtures averaged over
the generated tasks.

Written from scratch as a held-out world, without reference to how trajectories are segmented
or clustered.
"""
from __future__ import annotations

import json

import numpy as np
import polars as pl

from mechanism.core.options import as_generator
from mechanism.datasets.worlds._base import World, draw, mixture_planted, pick, truth_frame, word

STRATEGIES = ("advise", "restart_blind", "metrics_then_act", "log_dive", "deploy_rollback", "pod_triage", "escalate")
KINDS = ("latency", "errors", "saturation")
ARMS = {
    "base": {"advise": 0.12, "restart_blind": 0.2, "metrics_then_act": 0.18, "log_dive": 0.15,
             "deploy_rollback": 0.1, "pod_triage": 0.1, "escalate": 0.15},
    "rl": {"advise": 0.04, "restart_blind": 0.07, "metrics_then_act": 0.2, "log_dive": 0.14,
           "deploy_rollback": 0.2, "pod_triage": 0.25, "escalate": 0.1},
}
#: kind of task -> strategy -> factor on the arm's weight (the same in every arm)
KIND_TILT = {"errors": {"deploy_rollback": 1.6}, "saturation": {"pod_triage": 1.5}}
# Success is random within every strategy: the outcome must not tell strategies apart.
_SUCCESS = {"advise": 0.15, "restart_blind": 0.35, "metrics_then_act": 0.6, "log_dive": 0.55,
            "deploy_rollback": 0.65, "pod_triage": 0.7, "escalate": 0.3}
_P_FAIL = 0.15  # the chance that a call fails; a failure is followed by the corrected call
_P_ALERTS_FIRST = 0.3
_P_STATUS_AFTER = 0.35

_SERVICES = ("payments-api", "auth-service", "checkout-web", "search-indexer", "inventory-svc", "orders-worker",
             "notifications", "cart-api", "user-profile", "pricing-engine")
_REGIONS = ("eu-west", "us-east", "ap-south", "eu-central", "us-west")
_METRICS = {
    "latency": ("latency_p99", "latency_p50", "request_rate", "upstream_latency"),
    "errors": ("error_rate", "http_5xx", "request_rate", "exceptions_per_min"),
    "saturation": ("cpu_utilization", "memory_rss", "queue_depth", "connection_pool_used"),
}
_WINDOWS = ("15m", "30m", "1h", "2h", "6h")
_CHANNELS = ("#incidents", "#inc-{svc}", "#ops-{region}")
_ONCALL = ("#sre-oncall", "#oncall-page", "#platform-oncall")
_SAY = {
    "list_alerts": ("Let me see which alerts are firing for {svc}.", "Checking active alerts first.",
                    "What is alerting on {svc} right now?"),
    "query_metrics": ("Let me pull {m} for {svc}.", "Checking the {m} graph.", "Looking at {m} over the last {w}."),
    "search_logs": ("Searching the {svc} logs.", "Let me grep the logs for '{q}'.", "Narrowing the log search."),
    "get_deploys": ("Was anything deployed to {svc} recently?", "Checking the recent deploys.",
                    "Let me look at the release history of {svc}."),
    "describe_pod": ("Describing pod {p}.", "Let me look at {p}.", "What state is {p} in?"),
    "rollback": ("Rolling {svc} back to {v}.", "The latest release looks suspect; rolling back to {v}.",
                 "Reverting to {v}."),
    "restart": ("Restarting {svc}.", "Let me restart {svc} and see if it recovers.", "A rolling restart of {svc}."),
    "scale": ("Scaling {svc} to {r} replicas.", "Adding capacity: {r} replicas.", "Scaling out {svc}."),
    "post_status": ("Posting an update to {c}.", "Letting {c} know.", "Status update to {c}."),
}


def _typo(svc: str, rng: np.random.Generator) -> str:
    """A misspelt service name (a letter dropped, or a wrong suffix)."""
    i = int(rng.integers(1, len(svc) - 1))
    bad = pick(rng, (svc[:i] + svc[i + 1:], svc.split("-")[0], svc.replace("-", "_")))
    return bad if bad != svc else svc[:i] + svc[i + 1:]


class _Session:
    """One transcript in OpenAI chat format; tool calls numbered, failures followed by the
    corrected call of the same tool."""

    def __init__(self, rng: np.random.Generator, task: dict, can_fail: bool) -> None:
        self.rng, self.task, self.can_fail = rng, task, can_fail
        self.messages: list[dict] = [
            {"role": "system", "content": pick(rng, (
                "You are the on-call SRE assistant with access to the production observability and ops tools.",
                "You are an incident-response agent for the platform team. "
                "Use the tools to investigate and mitigate."))},
            {"role": "user", "content": task["text"]}]
        self.n_calls = 0
        self.n_failures = 0

    def _turn(self, tool: str, args: dict, result: str) -> None:
        self.n_calls += 1
        cid = f"call_{self.rng.integers(16 ** 8):08x}"
        said = pick(self.rng, _SAY[tool]).format(
            svc=args.get("service", self.task["service"]), m=args.get("metric", "the metric"),
            w=args.get("window", "hour"), q=args.get("query", ""), p=args.get("pod", "the pod"),
            v=args.get("version", "the previous release"), r=args.get("replicas", "more"),
            c=args.get("channel", "the channel"))
        if self.rng.random() < 0.25:
            said = ""  # sometimes the agent says nothing before a call
        self.messages.append({"role": "assistant", "content": said, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": tool, "content": result})

    def call(self, tool: str, args: dict, result: str) -> None:
        """The call; first, where it fails, a broken version of it answered with an error."""
        if self.can_fail and self.rng.random() < _P_FAIL:
            self.n_failures += 1
            self._turn(tool, *self._broken(tool, args))
        self._turn(tool, args, result)

    def _broken(self, tool: str, args: dict) -> tuple[dict, str]:
        rng = self.rng
        svc = args.get("service", self.task["service"])
        ns = pick(rng, ("prod", f"prod-{self.task['region']}", "payments-prod", "core"))
        options = []
        if "service" in args:
            bad = _typo(svc, rng)
            options.append(({"service": bad}, f"Error: service '{bad}' not found"))
        if "window" in args:
            bad = pick(rng, ("15 mins", "last hour", "1hr30", "-1h", "14:10-"))
            options.append(({"window": bad}, f"Error: malformed time range '{bad}'"))
        if tool == "query_metrics":
            bad = pick(rng, ("p99_latency", "errors", "cpu", "mem_usage", "latency99"))
            options.append(({"metric": bad}, f"Error: unknown metric '{bad}'"))
        if tool == "search_logs":
            q = args["query"]
            options.append(({"query": q + ' AND ("'}, f"Error: query parse error at position {len(q) + 6}"))
        if tool == "describe_pod":
            bad = args["pod"][:-2] + word(rng, 1)[:2]
            options.append(({"pod": bad}, f'Error: pods "{bad}" not found'))
        if tool == "rollback":
            bad = f"v{int(rng.integers(1, 4))}.{int(rng.integers(0, 30))}"
            options.append(({"version": bad}, f"Error: version {bad} not found in release history of {svc}"))
        if tool == "scale":
            bad = int(rng.integers(80, 400))
            options.append(({"replicas": bad}, f"Error: replicas must be between 1 and 64, got {bad}"))
        if tool in ("restart", "scale", "rollback", "describe_pod"):
            options.append(({}, f"Error: permission denied: user 'oncall-bot' cannot {tool} in namespace '{ns}'"))
        if tool == "post_status":
            bad = pick(rng, ("#incident", "#inc_" + svc, "incidents"))
            options.append(({"channel": bad}, f"Error: channel '{bad}' not found"))
        if tool in ("list_alerts", "get_deploys"):
            options.append(({}, pick(rng, ("Error: upstream timeout contacting alertmanager",
                                           "Error: 503 from deploy API, try again"))))
        change, err = options[int(rng.integers(len(options)))]
        return dict(args, **change), err

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})


def _alerts(rng: np.random.Generator, task: dict) -> str:
    names = {"latency": ("HighLatencyP99", "SLOBurnRateFast", "UpstreamSlow"),
             "errors": ("HighErrorRate", "Http5xxSpike", "SLOBurnRateFast"),
             "saturation": ("CPUThrottlingHigh", "PodMemoryNearLimit", "QueueBacklogGrowing")}[task["kind"]]
    n = int(rng.integers(1, 4))
    return json.dumps([{"alert": names[i], "severity": pick(rng, ("critical", "warning")),
                        "since": task["since"], "service": task["service"]} for i in range(n)])


def _metric_result(rng: np.random.Generator, metric: str, window: str) -> str:
    base = float(rng.uniform(1, 100))
    points = [round(base * float(rng.uniform(0.8, 3.0)), 2) for _ in range(int(rng.integers(4, 8)))]
    if rng.random() < 0.5:
        return json.dumps({"metric": metric, "window": window, "points": points})
    return f"{metric} over {window}: min {min(points)}, max {max(points)}, last {points[-1]}"


def _pod(rng: np.random.Generator, svc: str) -> str:
    return f"{svc}-{rng.integers(16 ** 6):06x}-{word(rng, 1)[:3]}{int(rng.integers(10, 99))}"


def _status_text(rng: np.random.Generator, task: dict, acted: str | None) -> str:
    what = {"latency": "elevated latency", "errors": "elevated error rate", "saturation": "resource saturation"}[
        task["kind"]]
    head = pick(rng, ("Investigating", "Update", "INC", "Status"))
    tail = f"mitigation: {acted}" if acted else pick(rng, ("still investigating", "next update in 15 min",
                                                           "no customer-facing action yet"))
    return f"{head}: {task['service']} ({task['region']}) {what} since {task['since']}; {tail}."


def _episode(rng: np.random.Generator, strategy: str, task: dict) -> _Session:
    s = _Session(rng, task, can_fail=strategy != "advise")
    svc, kind = task["service"], task["kind"]
    channel = pick(rng, _CHANNELS).format(svc=svc.split("-")[0], region=task["region"])
    if strategy == "advise":
        s.answer(pick(rng, (
            f"For {svc}, I'd start with the dashboards: compare p99 and error rate before and after "
            f"{task['since']}, check whether a deploy went out, and restart or roll back if it did.",
            "Without access I can only suggest: check recent deploys, look at saturation (CPU, memory, "
            "connection pools), and scale out if the pods are pegged.",
            f"Typical causes of this on {svc}: a bad release, a noisy neighbour or a dependency slowing down. "
            "Roll back the last deploy first if it lines up with the start of the incident.")))
        return s
    if strategy != "pod_triage" and rng.random() < _P_ALERTS_FIRST:  # optional: alerts first
        s.call("list_alerts", {"service": svc}, _alerts(rng, task))
    acted = None
    if strategy == "restart_blind":
        s.call("restart", {"service": svc}, pick(rng, ("restart triggered", json.dumps(
            {"status": "rolling restart started", "pods": int(rng.integers(3, 12))}))))
        acted = "restarted"
    elif strategy == "metrics_then_act":
        metrics = list(_METRICS[kind])
        rng.shuffle(metrics)
        for m in metrics[:int(rng.integers(1, 4))]:
            w = pick(rng, _WINDOWS)
            s.call("query_metrics", {"service": svc, "metric": m, "window": w}, _metric_result(rng, m, w))
        if kind == "saturation" or (kind == "latency" and rng.random() < 0.5):
            r = int(rng.integers(4, 24))
            s.call("scale", {"service": svc, "replicas": r}, json.dumps({"service": svc, "replicas": r,
                                                                          "status": "scaling"}))
            acted = f"scaled to {r} replicas"
        else:
            s.call("restart", {"service": svc}, "restart triggered")
            acted = "restarted"
    elif strategy == "log_dive":
        exc = pick(rng, ("TimeoutError", "ConnectionResetError", "NullPointerException", "OutOfMemoryError",
                         "DeadlineExceeded", "PoolExhausted"))
        queries = [pick(rng, ("level:error", "ERROR", "status>=500", "level:warn OR level:error")),
                   pick(rng, (f"level:error AND {exc}", f'"{exc}"', f"{exc} AND upstream")),
                   f"{exc} AND {pick(rng, ('db-primary', 'redis', 'grpc', 'pool'))}",
                   f"trace_id={rng.integers(16 ** 12):012x}"]
        w = pick(rng, _WINDOWS)
        for q in queries[:int(rng.integers(2, 5))]:
            hits = int(rng.integers(3, 4000))
            s.call("search_logs", {"service": svc, "query": q, "window": w},
                   pick(rng, (json.dumps({"hits": hits, "sample": [
                       f"{task['since']}:0{int(rng.integers(10))} {exc}: request to upstream failed"]}),
                              f"{hits} matching lines; top: {exc} in handler /{word(rng)}")))
            w = pick(rng, (w, "15m", "30m"))
    elif strategy == "deploy_rollback":
        major, minor = int(rng.integers(1, 9)), int(rng.integers(10, 90))
        latest, prev = f"v{major}.{minor}.{int(rng.integers(1, 9))}", f"v{major}.{minor - 1}.0"
        s.call("get_deploys", {"service": svc}, json.dumps([
            {"version": latest, "at": task["since"], "by": word(rng)},
            {"version": prev, "at": pick(rng, ("yesterday 16:02", "2 days ago", "last week"))}]))
        s.call("rollback", {"service": svc, "version": prev}, pick(rng, (
            f"rollback of {svc} to {prev} started",
            json.dumps({"service": svc, "version": prev, "status": "rolling"}))))
        acted = f"rolled back to {prev}"
    elif strategy == "pod_triage":
        s.call("list_alerts", {"service": svc}, _alerts(rng, task))
        oom = False
        for _ in range(int(rng.integers(2, 5))):
            pod = _pod(rng, svc)
            state = pick(rng, ("Running", "CrashLoopBackOff", "OOMKilled", "Running (restarts: 7)"))
            oom = oom or state == "OOMKilled"
            s.call("describe_pod", {"service": svc, "pod": pod}, json.dumps(
                {"pod": pod, "state": state, "cpu": f"{int(rng.integers(40, 100))}%",
                 "memory": f"{int(rng.integers(200, 2048))}Mi"}))
        if oom:
            r = int(rng.integers(4, 24))
            s.call("scale", {"service": svc, "replicas": r}, json.dumps({"service": svc, "replicas": r}))
            acted = f"scaled to {r} replicas"
        else:
            s.call("restart", {"service": svc}, "restart triggered")
            acted = "restarted"
    elif strategy == "escalate":
        s.call("post_status", {"channel": channel, "text": _status_text(rng, task, None)}, "posted")
        if rng.random() < 0.5:
            s.call("post_status", {"channel": pick(rng, _ONCALL), "text": pick(rng, (
                f"Paging on-call: {svc} incident needs an owner.", f"@here {svc} is degraded, please take a look.",
                f"Escalating {svc} ({task['region']}) to the owning team."))}, "posted")
    if strategy != "escalate" and rng.random() < _P_STATUS_AFTER:  # optional: a status update at the end
        s.call("post_status", {"channel": channel, "text": _status_text(rng, task, acted)}, "posted")
    s.answer(pick(rng, (
        f"I've {acted} {svc}; keep an eye on the dashboards for the next 15 minutes." if acted else
        f"Findings for {svc} are above; I have not changed anything.",
        f"Summary: {task['kind']} incident on {svc}, " + (f"mitigation: {acted}." if acted else "no action taken."),
        "Done. " + (f"{svc} was {acted}." if acted else "Let me know if you want me to act."))))
    return s


def _task(rng: np.random.Generator) -> dict:
    svc = pick(rng, _SERVICES) if rng.random() < 0.7 else f"{word(rng)}-{pick(rng, ('api', 'svc', 'worker'))}"
    t = {"kind": pick(rng, KINDS), "service": svc, "region": pick(rng, _REGIONS),
         "since": f"{int(rng.integers(0, 24)):02d}:{int(rng.integers(0, 60)):02d}"}
    texts = {
        "latency": ("{service} latency p99 is {x}s since {since}, {region}.",
                    "Checkout is slow: p99 on {service} went to {x}s around {since}. Can you look?",
                    "Users in {region} report timeouts; {service} p50 doubled since {since}."),
        "errors": ("Error rate spiking on {service} in {region} since {since}.",
                   "{service} is throwing 5xx, about {p}% of requests since {since}.",
                   "We're seeing failed logins / errors from {service} ({region}) starting {since}."),
        "saturation": ("{service} pods are pegged at 100% CPU since {since} in {region}.",
                       "Queue depth on {service} keeps growing since {since}; workers can't keep up.",
                       "{service} in {region} is near its memory limit, pods getting evicted since {since}."),
    }
    t["text"] = pick(rng, texts[t["kind"]]).format(x=round(float(rng.uniform(1.5, 9)), 1),
                                                   p=int(rng.integers(3, 40)), **t)
    return t


def _mixture(mix: dict[str, float], kind: str) -> dict[str, float]:
    """The arm's mixture on a task of this kind (:data:`KIND_TILT`), normalised."""
    tilted = {k: float(p) * KIND_TILT.get(kind, {}).get(k, 1.0) for k, p in mix.items()}
    total = sum(tilted.values())
    return {k: p / total for k, p in tilted.items()}


def sre(*, n_questions: int = 60, n_samples: int = 4, arms: dict[str, dict[str, float]] | None = None,
        random_state: int | np.random.Generator | None = 0) -> World:
    """Generate the on-call SRE / incident-response world (OpenAI ``tool_calls`` records).

    Parameters
    ----------
    n_questions, n_samples
        Incidents (tasks), and episodes per incident and arm.
    arms
        Arm name -> strategy mixture (default: ``base`` and ``rl``, which differ only in it);
        tilted by the kind of task as :data:`KIND_TILT` says.
    random_state
        Seed (int), numpy Generator, or ``None`` (fresh entropy) of every random choice.

    Returns
    -------
    World
        Records in format ``openai``; truth ``arm, question_id, sample_id, strategy, kind,
        n_calls, n_failures, correct``; ``planted["shares"]``: the mixtures averaged over the
        generated tasks.

    Examples
    --------
    >>> w = sre(n_questions=2, n_samples=1)
    >>> w.format, len(w.records), sorted(set(w.truth["arm"]))
    ('openai', 4, ['base', 'rl'])
    """
    rng = as_generator(random_state)
    arms = arms or ARMS
    tasks = [(f"sre-{i:04d}", _task(rng)) for i in range(n_questions)]
    records, truth = [], []
    for arm, mix in arms.items():
        for qid, task in tasks:
            mixture = _mixture(mix, task["kind"])
            for sample in range(n_samples):
                strategy = draw(rng, mixture)
                s = _episode(rng, strategy, task)
                correct = bool(rng.random() < _SUCCESS[strategy])
                records.append({"arm": arm, "question_id": qid, "sample_id": sample, "gold": [],
                                "correct": correct, "messages": s.messages})
                truth.append((arm, qid, sample, strategy, task["kind"], s.n_calls, s.n_failures, correct))
    average = {arm: {k: float(np.mean([_mixture(mix, t["kind"])[k] for _, t in tasks])) if tasks else float(p)
                     for k, p in mix.items()} for arm, mix in arms.items()}
    return World(name="sre", format="openai", records=records,
                 truth=truth_frame(truth, {"kind": pl.String, "n_calls": pl.Int64, "n_failures": pl.Int64,
                                           "correct": pl.Boolean}),
                 planted=mixture_planted(average, _SUCCESS))
