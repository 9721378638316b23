#!/usr/bin/env python3
"""Writes tests/data/traces/lint_clean_session.ndjson and the lint_dirty_*.ndjson variants.

The clean trace is one full conforming 0.0.6 session (handshake with tools, all 13 hooks and
producer messaging; recovery start/complete; ping; events of each delivery class; a bus event;
emits with results; a burst of exactly 40 emits in one second; a single and a named tool call; each
hook once; producer register/send/identical retry/discard/unregister/rejected send/discard again;
shutdown, stdin EOF, stdout EOF, exit 0). It must lint with ZERO findings.

Each dirty variant changes the clean session in exactly one place so that exactly one rule breaks
(tests/rules/lint_fixture_test.cpp asserts the rule and that nothing else is reported at MUST
level). The outputs are committed; run this again only to change them:
    python3 tests/rules/gen_lint_fixtures.py tests/data/traces
"""
import json
import os
import sys

S1 = "0191c0de-0000-7000-8000-000000000001"
S2 = "0191c0de-0000-7000-8000-000000000002"
INV1 = "0191c0de-0000-7000-8000-0000000000a1"
INV2 = "0191c0de-0000-7000-8000-0000000000a2"
ATT = "0191c0de-0000-7000-8000-0000000000b1"
PROD1 = "0191c0de-0000-7000-8000-0000000000c1"
MSG1 = "0191c0de-0000-7000-8000-0000000000d1"
MSG2 = "0191c0de-0000-7000-8000-0000000000d2"
MODEL = {"selection": {"model": "anthropic/claude-x", "variant": None}, "provider_id": "anthropic",
         "model_id": "claude-x", "adapter_id": "anthropic",
         "selection_fingerprint": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
HOOKS = ["tool_before_call", "tool_after_result", "agent_before_start", "session_before_compact",
         "user_before_input", "model_before_request", "provider_before_headers", "provider_before_request",
         "provider_after_response", "message_end", "model_before_select", "session_before_fork",
         "session_before_revert"]
TOOLS = [
    {"name": "echo_single", "description": "Echo a file path", "permission_name": "echo",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
     "primary_resource_param": "path", "output": {"kind": "single"}},
    {"name": "grep_named", "description": "Search", "permission_name": "grep",
     "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}},
     "primary_resource_param": None, "output": {"kind": "named", "streams": ["results", "errors"]}},
]


def hook_frames(ctx):
    """(params, result) for each hook, in HOOKS order."""
    base = {"session_id": S1, "context_id": ctx}
    m = lambda **kw: dict(base, **kw)  # noqa: E731
    return {
        "tool_before_call": (m(tool="echo_single", arguments={"path": "a"}, permission_name="echo", resource="a"),
                             {"action": "allow"}),
        "tool_after_result": (m(tool="echo_single", arguments={"path": "a"}, result_content="a", is_error=False),
                              {"action": "keep"}),
        "agent_before_start": (m(agent_path="main", prompt_context={"input": "hi"}),
                               {"append_to_system_prompt": "Be brief."}),
        "session_before_compact": (m(checkpoint_id=S1 + ":12", additions=[]), {"addendum": "keep names"}),
        "user_before_input": (m(text="hello"), {"action": "transform", "new_text": "HELLO"}),
        "model_before_request": (m(attempt_id=ATT, messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                                   model=MODEL, params={}), {"action": "keep"}),
        "provider_before_headers": (m(attempt_id=ATT, headers={}), {}),
        "provider_before_request": (m(attempt_id=ATT, payload={"model": "claude-x"}), {"action": "keep"}),
        "provider_after_response": (m(attempt_id=ATT, status=200, headers={}), {}),
        "message_end": (m(attempt_id=ATT, role="assistant", content=[{"type": "text", "text": "hi", "metadata": None}]),
                        {"action": "keep"}),
        "model_before_select": (m(to={"model": "anthropic/claude-x"}, source="config"), {"action": "allow"}),
        "session_before_fork": (m(through_seq=3), {"action": "allow"}),
        "session_before_revert": (m(through_seq=3), {"action": "override", "instructions_override": "redo"}),
    }


class Trace:
    def __init__(self):
        self.lines = [json.dumps({"conform_trace": 1, "started": "2026-01-01T00:00:00.000000Z", "profile": "0.0.6",
                                  "role": "engine", "peer": ["./fixture-plugin"], "clock": "virtual",
                                  "name": "lint_clean_session"}, separators=(",", ":"))]
        self.t = 0

    def at(self, ms):
        self.t = max(self.t, int(ms * 1000))

    def ev(self, obj):
        self.t += 1
        self.lines.append(json.dumps(dict({"t": self.t}, **obj), separators=(",", ":")))

    def e2p(self, frame):
        self.ev({"dir": "e2p", "frame": frame})

    def p2e(self, frame):
        self.ev({"dir": "p2e", "frame": frame})


def req(i, method, params):
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def note(method, params):
    return {"jsonrpc": "2.0", "method": method, "params": params}


def ok(i, result):
    return {"jsonrpc": "2.0", "id": i, "result": result}


def err(i, code, msg):
    return {"jsonrpc": "2.0", "id": i, "error": {"code": code, "message": msg}}


def event(seq, ctx, ev, session=S1):
    return note("plugin/event", {"session_id": session, "context_id": ctx, "seq": seq, "event": ev,
                                 "timestamp": "2026-01-01T00:00:01Z"})


def emit(ctx, name, session=S1, payload=None):
    return note("plugin/emit", {"session_id": session, "context_id": ctx, "name": name,
                                "payload": payload if payload is not None else {"n": 1}})


def emit_result(name, bus="published", reason=None):
    p = {"name": name, "bus": bus, "durable": "rejected"}
    if reason:
        p["reason"] = reason
    return note("plugin/emit_result", p)


def session(v=None):
    """The clean session; `v` names a dirty variant (one change)."""
    v = v or ""
    tr = Trace()
    caps = {"tools": True, "resources": False, "subscribe_events": True, "subscribe_bus": True, "publish_bus": True,
            "publish_session_events": False, "producer_messaging": True, "intercept": HOOKS}
    # Handshake (INIT-01/02/09/10), recovery first (RECOV-02/03), completion (RECOV-05/10).
    tr.e2p(req(1, "plugin/initialize", {"protocol_version": "0.0.6", "engine_version": "1.0.0", "capabilities": {
        "ping": True, "shutdown": True, "tools": True, "event_streaming": True, "event_publishing": True,
        "interception": True, "producer_messaging": True}}))
    tr.p2e(ok(1, {"protocol_version": "0.0.6", "name": "fixture", "version": "1.0.0", "capabilities": caps,
                  "tools": TOOLS}))
    tr.e2p(note("plugin/recovery/start", {}))
    if v == "recov02":
        tr.e2p(note("plugin/recovery/start", {}))
    tr.p2e(req(1, "plugin/recovery/complete", {"outcome": {"status": "ready"}}))
    tr.e2p(ok(1, {}))
    tr.p2e(req(2, "plugin/recovery/complete", {"outcome": {"status": "ready"}}))  # identical repeat
    tr.e2p(ok(2, {}) if v != "recov10" else err(2, -32048, "recovery already completed"))
    tr.e2p(req(2, "plugin/ping", {}))
    tr.p2e(ok(2, {}))

    # Events of each class (ordinary, chunk, terminal) and a bus event; emits with their results.
    tr.at(1000)
    tr.e2p(event(1, "c-ev1", {"type": "run_started"}))
    tr.e2p(event(2, "c-ev2", {"type": "tool_call_progress", "output_chunk": "partial"}))
    tr.e2p(event(2 if v == "evt05" else 3, "c-ev3", {"type": "tool_call_terminated"}))
    if v == "evt08":
        tr.e2p(event(4, "c-ev4", {"type": "text_delta", "delta": "hi"}))
    tr.e2p(note("plugin/bus_event", {"session_id": S1, "context_id": "c-bus1",
                                      "plugin": "fixture" if v == "evt19" else "observer",
                                      "name": "ping", "payload": {"x": [1, 2]}}))
    tr.p2e(emit("c-ev1", "progress"))
    tr.e2p(emit_result("progress"))
    tr.p2e(emit("c-bus1", "pong"))
    if v != "emit02":
        tr.e2p(emit_result("pong"))
    if v == "emit06":
        tr.p2e(emit("c-ev1", "again"))
        tr.e2p(emit_result("again"))

    # A burst of exactly 40 emits (41 in the dirty variant) inside one second (QUOTA-05).
    n = 41 if v == "quota05" else 40
    tr.at(10000)
    for i in range(n):
        tr.e2p(event(10 + i, "c-q%d" % i, {"type": "run_started"}))
    tr.at(10100)
    for i in range(n):
        tr.p2e(emit("c-q%d" % i, "burst"))
        tr.e2p(emit_result("burst"))

    # Tool calls: single (with an emit on the request grant) and named (TOOL-05/06/09/11/12/19).
    tr.at(20000)
    tr.e2p(req(3, "plugin/tools/call", {"tool": "echo_single", "session_id": S1, "context_id": "c-call1",
                                        "invocation_id": INV1, "arguments": {"path": "src/lib.rs"},
                                        "resource": "src/main.rs" if v == "tool06" else "src/lib.rs",
                                        "cancellation_token": INV1}))
    tr.p2e(emit("c-call1", "tool_progress"))
    tr.e2p(emit_result("tool_progress"))
    tr.p2e(ok(3, {"output": {"kind": "single", "text": "src/lib.rs"}, "display": "echoed", "is_error": False}))
    tr.e2p(req(4, "plugin/tools/call", {"tool": "grep_named", "session_id": S1, "context_id": "c-call2",
                                        "invocation_id": INV2, "arguments": {"pattern": "x"}, "resource": None}))
    if v == "tool12":
        tr.p2e(ok(4, {"output": {"kind": "single", "text": "x"}, "is_error": False}))
    else:
        tr.p2e(ok(4, {"output": {"kind": "named", "streams": [{"stream": "results", "text": "x:1"},
                                                               {"stream": "errors", "text": ""}]},
                      "is_error": False}))
    next_id = 5
    if v == "tool08":
        tr.e2p(req(next_id, "plugin/tools/call", {"tool": "ghost", "session_id": S1, "context_id": "c-call3",
                                                  "invocation_id": INV2, "arguments": {}, "resource": None}))
        tr.p2e(err(next_id, -32601, "unknown tool"))
        next_id += 1

    # Each hook once (HOOK-01/02/13 and per-hook results).
    tr.at(30000)
    frames = hook_frames("c-hook")
    for h in HOOKS:
        params, result = frames[h]
        if v == "hook43" and h == "model_before_request":
            result = {"action": "replace"}
        tr.e2p(req(next_id, "plugin/intercept/" + h, params))
        tr.p2e(ok(next_id, result))
        next_id += 1

    # Producer messaging: register, send, identical retry, second key, discard, unregister, a send
    # that must be rejected, discard again (PROD-05/09/14/15/18/19/23/26/31).
    tr.at(40000)
    tr.p2e(req(3, "plugin/producer/register", {"session_id": S1}))
    tr.e2p(ok(3, {"producer_id": PROD1}))
    send = {"session_id": S1, "producer_id": PROD1, "mode": "queue", "idempotency_key": "job-1",
            "description": "Build finished", "body": "The build finished."}
    tr.p2e(req(4, "plugin/producer/send", send))
    tr.e2p(ok(4, {"message_id": MSG1}))
    tr.p2e(req(5, "plugin/producer/send", send))  # identical retry: the original receipt
    tr.e2p(ok(5, {"message_id": MSG2 if v == "prod18" else MSG1}))
    if v == "prod19":
        tr.p2e(req(50, "plugin/producer/send", dict(send, body="Another body.")))
        tr.e2p(ok(50, {"message_id": MSG2}))
    tr.p2e(req(6, "plugin/producer/send", dict(send, idempotency_key="job-2", mode="steer")))
    tr.e2p(ok(6, {"message_id": MSG2}))
    tr.p2e(req(7, "plugin/producer/discard", {"session_id": S1, "message_id": MSG2}))
    tr.e2p(err(7, -32043, "registration invalid") if v == "prod27" else ok(7, {}))
    tr.p2e(req(8, "plugin/producer/unregister", {"session_id": S1, "producer_id": PROD1}))
    tr.e2p(ok(8, {}))
    tr.p2e(req(9, "plugin/producer/send", dict(send, idempotency_key="job-3")))
    tr.e2p(ok(9, {"message_id": "0191c0de-0000-7000-8000-0000000000d3"}) if v == "prod15"
           else err(9, -32043, "registration closed"))
    tr.p2e(req(10, "plugin/producer/discard", {"session_id": S1, "message_id": MSG2}))
    tr.e2p(ok(10, {}))

    # Shutdown (SHUT-01/02/05/08).
    tr.at(50000)
    tr.e2p(note("plugin/shutdown", {}))
    if v == "shut05":
        tr.e2p(req(next_id, "plugin/ping", {}))
    if v == "shut02":
        tr.at(51000)
        tr.ev({"exit": {"signal": 9, "name": "SIGKILL"}})
        return tr.lines
    tr.ev({"dir": "e2p", "eof": True})
    tr.ev({"dir": "p2e", "eof": True})
    tr.ev({"exit": {"code": 0}})
    return tr.lines


# variant → the rule it breaks (mirrored in tests/rules/lint_fixture_test.cpp)
VARIANTS = {
    "recov02": "RECOV-02", "recov10": "RECOV-10", "evt05": "EVT-05", "evt08": "EVT-08", "evt19": "EVT-19",
    "emit02": "EMIT-02", "emit06": "EMIT-06", "quota05": "QUOTA-05", "tool06": "TOOL-06", "tool08": "TOOL-08",
    "tool12": "TOOL-12", "hook43": "HOOK-43", "prod15": "PROD-15", "prod18": "PROD-18", "prod19": "PROD-19",
    "prod27": "PROD-27", "shut02": "SHUT-02", "shut05": "SHUT-05",
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/traces"
    with open(os.path.join(out, "lint_clean_session.ndjson"), "w") as f:
        f.write("\n".join(session()) + "\n")
    for v in VARIANTS:
        with open(os.path.join(out, "lint_dirty_%s.ndjson" % v), "w") as f:
            f.write("\n".join(session(v)) + "\n")


if __name__ == "__main__":
    main()
