/* conform's conforming nanopi events plugin, and (one -D switch each) the fault gallery built from it.
 * manifest.json lists every component: its world, the switch, the NP rule it breaks (null for the
 * conforming ones) and the grant its case should configure.
 *
 * Conforming behaviour (world extension-events; NP §Keep the handler boring):
 *  - list-tools: events_seen, last_payload, notify, greet, busy.   execute-tool dispatches them.
 *  - list-commands: [] and an execute-command stub (NP-33).
 *  - list-events: a few deliverable names (NP-06), the same on every call (NP-08).
 *  - handle-event: records the delivery (name ring + last payload), host-log(0, ...) per delivery,
 *    one host-notify per session_start (well under 10 per turn, NP-38), returns "{}" (NP-03).
 *  - tool events_seen → {"content":"<count>: name name …"} (state since the last (re)instantiation);
 *    last_payload → the last payload received, as the content string; notify → host-notify(args),
 *    content = the host's answer (a host-import round trip for runner tests); busy → spins the number of
 *    iterations given in its arguments (default 200 M) to hold the plugin busy (NP-20 tests).
 */
#include "np.h"

/* What list-events returns: one value-less switch per gallery variant (manifest.json "defines"). */
#define ALL_11 "\"tool_execution_start\",\"tool_execution_end\",\"input\",\"before_agent_start\",\"turn_start\",\"turn_end\",\"message_end\",\"session_start\",\"session_shutdown\",\"session_before_compact\",\"session_compact\""
#if defined(LE_EMPTY)
#define LIST_EVENTS "[]"
#elif defined(LE_MALFORMED)
#define LIST_EVENTS "[\"turn_start\"," /* cut short: not JSON (NP-37) */
#elif defined(LE_33_NAMES)
#define LIST_EVENTS "[" ALL_11 "," ALL_11 "," ALL_11 "]" /* 33 > 32 (NP-37) */
#elif defined(LE_NOT_ARRAY)
#define LIST_EVENTS "{\"events\":[\"turn_start\"]}" /* NP-06 */
#elif defined(LE_UNKNOWN_NAME)
#define LIST_EVENTS "[\"turn_start\",\"bogus_event\"]" /* NP-06 */
#elif defined(LE_RETIRED_NAME)
#define LIST_EVENTS "[\"turn_start\",\"pre_tool_use\"]" /* NP-13, NP-17 */
#elif defined(LE_MESSAGE_UPDATE)
#define LIST_EVENTS "[\"turn_start\",\"message_update\",\"tool_execution_update\"]" /* NP-14 */
#elif defined(LE_UNGRANTED)
#define LIST_EVENTS "[\"turn_start\",\"input\",\"session_shutdown\"]" /* NP-09 with its grant */
#else
#define LIST_EVENTS "[\"tool_execution_start\",\"tool_execution_end\",\"turn_start\",\"input\",\"session_start\"]"
#endif

/* ---- state (guest memory: lost on a rebuild, which is what tests observe) --------------------- */
#define SEEN_MAX 256      /* names kept in the ring; the count keeps going */
#define NAME_MAX 48       /* longest event name kept (the longest PI name is 22 characters) */
#define PAYLOAD_MAX (256u << 10) /* last payload kept, cut above 256 KiB */
static char seen[SEEN_MAX][NAME_MAX];
static np_size seen_len[SEEN_MAX];
static unsigned long seen_count;
static char last_payload[PAYLOAD_MAX];
static np_size last_payload_len;
static unsigned long list_events_calls;

NP_EXPORT("list-tools") np_u32 *list_tools(void) {
  return np_return_lit(
      "[{\"name\":\"events_seen\",\"description\":\"Events delivered since the plugin was (re)built\","
      "\"parameters\":{\"type\":\"object\",\"properties\":{}}},"
      "{\"name\":\"last_payload\",\"description\":\"The last event payload received\","
      "\"parameters\":{\"type\":\"object\",\"properties\":{}}},"
      "{\"name\":\"notify\",\"description\":\"Shows its arguments to the user (host-notify); returns the host's answer\","
      "\"parameters\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}},"
      "{\"name\":\"greet\",\"description\":\"Says hello\","
      "\"parameters\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}},"
      "{\"name\":\"busy\",\"description\":\"Spins to keep the plugin busy\","
      "\"parameters\":{\"type\":\"object\",\"properties\":{\"iterations\":{\"type\":\"integer\"}}}}]");
}

static np_u32 *tool_events_seen(void) {
  np_out_reset();
  np_out_lit("{\"content\":\"");
  np_out_uint(seen_count);
  np_out_lit(":");
  unsigned long first = seen_count > SEEN_MAX ? seen_count - SEEN_MAX : 0;
  for (unsigned long i = first; i < seen_count; i++) {
    np_out_lit(" ");
    np_out_json_escaped(seen[i % SEEN_MAX], seen_len[i % SEEN_MAX]);
  }
  np_out_lit("\"}");
  return np_return_out();
}

static np_u32 *tool_last_payload(void) {
  np_out_reset();
  np_out_lit("{\"content\":\"");
  np_out_json_escaped(last_payload, last_payload_len);
  np_out_lit("\"}");
  return np_return_out();
}

static volatile unsigned long spin_sink;

NP_EXPORT("execute-tool") np_u32 *execute_tool(const char *name, np_size name_len, const char *args, np_size args_len) {
  if (np_eq(name, name_len, "events_seen")) return tool_events_seen();
  if (np_eq(name, name_len, "last_payload")) return tool_last_payload();
  if (np_eq(name, name_len, "notify")) {
    /* Sends its arguments to host-notify and returns the host's answer ("" or "error: …"). */
    np_u32 r[2];
    np_host_notify(args, args_len, r);
    np_out_reset();
    np_out_lit("{\"content\":\"");
    np_out_json_escaped((const char *)(unsigned long)r[0], r[1]);
    np_out_lit("\"}");
    return np_return_out();
  }
  if (np_eq(name, name_len, "greet")) return np_return_lit("{\"content\":\"hello from conform's events plugin\"}");
  if (np_eq(name, name_len, "busy")) {
    unsigned long n = np_first_uint(args, args_len, 200000000ul);
    for (unsigned long i = 0; i < n; i++) spin_sink = spin_sink + i;
    return np_return_lit("{\"content\":\"done\"}");
  }
  return np_return_lit("{\"content\":\"unknown tool\",\"is_error\":true}");
}

NP_EXPORT("list-commands") np_u32 *list_commands(void) { return np_return_lit("[]"); }

NP_EXPORT("execute-command") np_u32 *execute_command(const char *n, np_size nl, const char *a, np_size al) {
  (void)n; (void)nl; (void)a; (void)al;
  return np_return_lit("{\"error\":\"this plugin has no commands\"}");
}

NP_EXPORT("list-events") np_u32 *list_events(void) {
  list_events_calls++;
#if defined(FAULT_LIST_EVENTS_TRAP)
  __builtin_trap();
#elif defined(FAULT_LIST_EVENTS_CHANGES)
  /* Asks for more the second time: a host that re-derived the subscription would widen it (NP-08). */
  if (list_events_calls > 1)
    return np_return_lit("[\"turn_start\",\"input\",\"tool_execution_start\",\"tool_execution_end\",\"session_start\"]");
  return np_return_lit("[\"turn_start\"]");
#else
  return np_return_lit(LIST_EVENTS);
#endif
}

#if defined(FAULT_WASI_IMPORT)
/* A real WASI interface function (NANOPI-HOST.md §2: nothing links WASI in nanopi). */
__attribute__((import_module("wasi:random/random@0.2.0"), import_name("get-random-u64"))) unsigned long long wasi_random_u64(void);
#endif
#if defined(FAULT_UNKNOWN_IMPORT)
/* A root import that is not one of the nine nanopi links. */
NP_IMPORT("host-exec") void np_host_exec(const char *p, np_size n, np_u32 *ret);
#endif

static void record(const char *ev, np_size ev_len, const char *payload, np_size payload_len) {
  np_size k = seen_count % SEEN_MAX;
  np_size n = ev_len < NAME_MAX ? ev_len : NAME_MAX;
  for (np_size i = 0; i < n; i++) seen[k][i] = ev[i];
  seen_len[k] = n;
  seen_count++;
  last_payload_len = payload_len < PAYLOAD_MAX ? payload_len : PAYLOAD_MAX;
  for (np_size i = 0; i < last_payload_len; i++) last_payload[i] = payload[i];
}

NP_EXPORT("handle-event") np_u32 *handle_event(const char *ev, np_size ev_len, const char *payload, np_size payload_len) {
#if defined(FAULT_HANDLE_SPIN)
  /* Never returns on turn_start: only the host's 2 s budget stops it (NP-26). Other events are
   * recorded normally, so tests see later deliveries arrive in a fresh instance. */
  if (np_eq(ev, ev_len, "turn_start")) for (;;) spin_sink = spin_sink + 1;
#endif
#if defined(FAULT_TRAP_ON_PAYLOAD)
  if (np_contains(payload, payload_len, "conform-trap")) __builtin_trap();
#endif
  record(ev, ev_len, payload, payload_len);
  np_host_log(0, ev, ev_len);
#if defined(FAULT_NOTIFY_FLOOD)
  /* 11 lines in one turn: one over nanopi's limit of 10 per plugin per turn (NP-38). */
  if (np_eq(ev, ev_len, "turn_start"))
    for (int i = 0; i < 11; i++) np_notify("conform notify flood line");
#else
  if (np_eq(ev, ev_len, "session_start")) np_notify("conform events plugin: watching");
#endif
#if defined(FAULT_HTTP_IN_HANDLER)
  { np_u32 r[2]; const char *u = "https://example.invalid/conform-event"; np_host_http_get(u, np_strlen(u), r); }
#endif
#if defined(FAULT_ACT_WITHOUT_GRANT)
  {
    np_u32 r[2];
    np_host_call_tool("greet", 5, "{}", 2, r);
    const char *m = "conform: acting on an event";
    np_host_send_user_message(m, np_strlen(m), r);
  }
#endif
#if defined(FAULT_WASI_IMPORT)
  spin_sink = spin_sink + (unsigned long)wasi_random_u64();
#endif
#if defined(FAULT_UNKNOWN_IMPORT)
  { np_u32 r[2]; np_host_exec("ls", 2, r); }
#endif
#if defined(FAULT_RETURN_TEXT)
  /* A veto-shaped answer instead of "{}": nanopi discards it (NP-02, NP-03 "should"). */
  return np_return_lit("{\"decision\":\"block\",\"reason\":\"conform says no\"}");
#else
  return np_return_lit("{}");
#endif
}
