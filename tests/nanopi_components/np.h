/* A freestanding kit for nanopi test components in C (clang-14 --target=wasm32 -nostdlib; no libc).
 *
 * The canonical ABI as nanopi's own examples hand-write it (NANOPI-HOST.md §1): host imports come
 * from core module "$root" by bare name; a string parameter is a (ptr, len) pair; an export returning
 * a string returns an i32 pointing at an 8-byte (ptr, len) pair; an import returning a string takes a
 * trailing pointer to such a pair, which the host fills after allocating through our cabi_realloc.
 *
 * Memory: a bump arena above __heap_base (host-allocated arguments and import results) that every
 * export rewinds before returning, so a long session never runs out (the weakness NANOPI-HOST.md §2
 * notes in nanopi's memory example). Results are built in a static buffer outside the arena, which
 * stays valid until the host has read it (no cabi_post_* exports are used, like nanopi's examples).
 */
#ifndef NP_H
#define NP_H

typedef unsigned long np_size;
typedef unsigned int np_u32;

#define NP_IMPORT(name) __attribute__((import_module("$root"), import_name(name)))
#define NP_EXPORT(name) __attribute__((export_name(name)))

/* The nine root imports (NANOPI-HOST.md §1). Each string result lands in ret[0] (ptr), ret[1] (len). */
NP_IMPORT("host-log") void np_host_log(int level, const char *msg, np_size len);
NP_IMPORT("host-fs-read") void np_host_fs_read(const char *p, np_size n, np_u32 *ret);
NP_IMPORT("host-http-get") void np_host_http_get(const char *p, np_size n, np_u32 *ret);
NP_IMPORT("host-store-get") void np_host_store_get(const char *p, np_size n, np_u32 *ret);
NP_IMPORT("host-store-set") void np_host_store_set(const char *k, np_size kn, const char *v, np_size vn, np_u32 *ret);
NP_IMPORT("host-notify") void np_host_notify(const char *p, np_size n, np_u32 *ret);
NP_IMPORT("host-set-context") void np_host_set_context(const char *p, np_size n, np_u32 *ret);
NP_IMPORT("host-call-tool") void np_host_call_tool(const char *t, np_size tn, const char *a, np_size an, np_u32 *ret);
NP_IMPORT("host-send-user-message") void np_host_send_user_message(const char *p, np_size n, np_u32 *ret);

/* ---- arena ---------------------------------------------------------------------------------- */
extern unsigned char __heap_base;
static unsigned long np_top;

static void *np_alloc(np_size align, np_size size) {
  if (!np_top) np_top = (unsigned long)&__heap_base;
  if (align == 0) align = 1;
  np_top = (np_top + align - 1) & ~(unsigned long)(align - 1);
  void *p = (void *)np_top;
  np_top += size;
  unsigned long have = __builtin_wasm_memory_size(0) * 65536ul;
  if (np_top > have) {
    if (__builtin_wasm_memory_grow(0, (np_top - have + 65535) / 65536) == (unsigned long)-1)
      __builtin_trap(); /* out of memory: a trap, which the host turns into a rebuild */
  }
  return p;
}

static void np_rewind(void) { np_top = (unsigned long)&__heap_base; }

NP_EXPORT("cabi_realloc") void *cabi_realloc(void *old, np_size old_size, np_size align, np_size new_size) {
  void *p = np_alloc(align, new_size);
  for (np_size i = 0; old && i < old_size && i < new_size; i++) ((char *)p)[i] = ((char *)old)[i];
  return p;
}

/* ---- strings -------------------------------------------------------------------------------- */
static np_size np_strlen(const char *s) { np_size n = 0; while (s[n]) n++; return n; }

static int np_eq(const char *a, np_size an, const char *lit) {
  np_size n = np_strlen(lit);
  if (an != n) return 0;
  for (np_size i = 0; i < n; i++) if (a[i] != lit[i]) return 0;
  return 1;
}

__attribute__((unused)) static int np_contains(const char *a, np_size an, const char *lit) {
  np_size n = np_strlen(lit);
  for (np_size i = 0; i + n <= an; i++) {
    np_size j = 0;
    while (j < n && a[i + j] == lit[j]) j++;
    if (j == n) return 1;
  }
  return 0;
}

/* The result buffer: 1 MiB of .bss, so it costs nothing in the binary. Longer results are cut. */
#define NP_OUT_CAP (1u << 20)
static char np_out[NP_OUT_CAP];
static np_size np_out_len;
static np_u32 np_ret[2];

static void np_out_reset(void) { np_out_len = 0; }
static void np_out_put(const char *s, np_size n) {
  for (np_size i = 0; i < n && np_out_len < NP_OUT_CAP; i++) np_out[np_out_len++] = s[i];
}
static void np_out_lit(const char *s) { np_out_put(s, np_strlen(s)); }
/* Appends s as the inside of a JSON string (quotes, backslashes and control characters escaped).
 * Stops NP_OUT_RESERVE bytes before the end of the buffer, so the caller can still close the JSON. */
#define NP_OUT_RESERVE 64
static void np_out_json_escaped(const char *s, np_size n) {
  static const char hex[] = "0123456789abcdef";
  for (np_size i = 0; i < n && np_out_len + 6 < NP_OUT_CAP - NP_OUT_RESERVE; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') { char e[2] = {'\\', (char)c}; np_out_put(e, 2); }
    else if (c < 0x20) { char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]}; np_out_put(e, 6); }
    else np_out_put((const char *)&s[i], 1);
  }
}
static void np_out_uint(unsigned long v) {
  char b[24]; int n = 0;
  do { b[n++] = (char)('0' + v % 10); v /= 10; } while (v);
  while (n) np_out_put(&b[--n], 1);
}

/* Ends an export: rewinds the arena (the arguments are no longer needed) and returns the result. */
static np_u32 *np_return_out(void) {
  np_rewind();
  np_ret[0] = (np_u32)(unsigned long)np_out;
  np_ret[1] = (np_u32)np_out_len;
  return np_ret;
}
static np_u32 *np_return_lit(const char *s) { np_out_reset(); np_out_lit(s); return np_return_out(); }

__attribute__((unused)) static void np_log(int level, const char *s) { np_host_log(level, s, np_strlen(s)); }
static void np_notify(const char *s) { np_u32 r[2]; np_host_notify(s, np_strlen(s), r); }

/* Reads the first unsigned decimal number in s, or dflt. */
static unsigned long np_first_uint(const char *s, np_size n, unsigned long dflt) {
  np_size i = 0;
  while (i < n && (s[i] < '0' || s[i] > '9')) i++;
  if (i == n) return dflt;
  unsigned long v = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9') v = v * 10 + (unsigned long)(s[i++] - '0');
  return v;
}

#endif
