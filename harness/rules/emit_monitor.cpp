// harness/rules/emit_monitor — EMIT-* and QUOTA-*: context grants and emit outcomes (§11, §12.1).
//
// Grants: every e2p delivery with a context_id (plugin/event, plugin/bus_event, plugin/tools/call,
// plugin/intercept/*) activates a token at its trace time; notification tokens expire 5 s later
// (EMIT-10), request tokens end with their request's response (EMIT-08), the first emit spends a
// token (EMIT-06; EMIT-07 when that first use was itself rejected [impl]). Tokens may be shared
// across deliveries (§11.3, HOOK-11): a re-delivered token that is not spent is simply re-armed.
//
// Each plugin/emit gets exactly one plugin/emit_result, in order (EMIT-02). The expected outcome
// is derived from §11.4's rows in order, and ONLY the certain part is judged: a result of
// "published" when the trace proves a rejection (unknown/spent/expired/ended/mismatched token,
// name or size out of limits, quota certainly exhausted), the context-rejection status of the
// profile (EMIT-15), and durable always "rejected" in 0.0.6 (EMIT-16).
// EMIT-17 [chosen]: with publish_session_events a published result's reason points to
// plugin/producer/send.
// Deliberately never judged: "should have been published" (the engine may hold fewer grants,
// R4 caps active tokens at 1,024, and its clock runs behind the trace), expiry within ±250 ms of 5 s,
// sizes within the serialisation tolerance below.
//
// The PLUGIN's side (issue 6: "an emit with a token that was never delivered, used twice, used past
// its expiry or for another session"): an emit whose token the trace proves invalid is also reported
// against the plugin, under the rule that makes it invalid — EMIT-04 never delivered, EMIT-05 other
// session, EMIT-06 used before (not when the engine delivered the spent token again: the plugin
// could not know), EMIT-08 after its request was answered, EMIT-10 older than 5 s + 250 ms — as are
// a name (QUOTA-02) or payload (QUOTA-01) out of limits and more than 40 emits for one session within
// 750 ms (QUOTA-05: one second less the ±250 ms tolerance; only emits not already certainly
// rejected count). These rules bind the engine, whose answer to such an emit is a rejection or a
// drop, not a broken connection: the plugin-side findings are advisory (NON-STRICT), like the hook
// results of delivery_monitor. INIT-14 (M, plugin): an emit without publish_bus uses a capability
// the plugin did not declare (reported once per connection).
//
// Quotas (QUOTA-05/06): R4 windows (QUOTA-07) start at the engine's check time, which the trace
// only bounds: it lies between the emit's line and its result's line. The tracker keeps, per
// session, the interval in which the current window may have started and a LOWER bound of what it
// has admitted; only "published although the lower bound is already at the limit" is a FAIL.
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <new>

#include <fmt/format.h>

#include "core/protocol/limits.h"
#include "core/protocol/validate.h"
#include "harness/rules/monitor.h"

namespace conform::rules {
namespace {

namespace m = protocol::method;
constexpr std::int64_t kUs = 1000;
// §11.3 / EMIT-10: 5 s notification grant, in µs (signed: compared with trace time differences).
constexpr std::int64_t kGrantUs = static_cast<std::int64_t>(protocol::limits::kNotificationGrantMs) * kUs;
// EMIT-10 tolerance: RULES.md "Timing assertions use a tolerance of ±250 ms".
constexpr std::int64_t kToleranceUs = 250 * kUs;
// Live grants remembered. Past the cap unknown tokens are no longer judged (silence, not a guess).
constexpr std::size_t kMaxGrants = 65'536;
// The table is pruned (see prune()) whenever it has doubled since the last prune, never below this
// size: R4 holds at most 1,024 active tokens, so short traces keep every grant, and long ones keep a
// table the size of the live state at O(1) amortized cost. (A table of tens of thousands of tokens
// cost ~15 % of lint's time on a 1,000,000-message trace in cache misses alone.)
constexpr std::size_t kPruneFloor = 4'096;
// How long (trace time) a spent token stays exactly remembered: twice R4's own memory of spent
// tokens (30 s, §11.3 "Bookkeeping"), after which even the engine reports a reuse as unknown.
constexpr std::int64_t kSpentMemoryUs = 60'000 * kUs;

// Tokens the grant table has forgotten (pruned), kept EXACTLY as 60-bit hashes with what was known
// about them (spent, published, a request grant). Why: "once spent, a token stays spent" (§11.3) —
// a reuse of a forgotten token is still EMIT-06, a never-delivered one still EMIT-04, an expired or
// ended one still EMIT-10/EMIT-08. Memory: a flat open-addressing table of 8-byte slots at load
// ≤ 1/2 (the hash's top 60 bits and 4 flag bits in one word), growing from 8,192 slots up to
// kMaxForgottenSlots (2^22 slots: 2,097,152 forgotten tokens, 32 MiB) — 8 MiB for bench/lint's
// 10^6-message trace (~300,000 forgotten tokens). Past the cap nothing more is added and every
// token the table does not know is left unjudged (silence). A hash collision could make a newly
// delivered token look forgotten: ~n / 2^60 per token (10^-12 with 10^6 forgotten), the only
// inexactness left.
//
// Speed (issue 6): every probe of a table this size is a cache miss, and with 4 KiB pages a TLB
// miss too. One word per slot makes a probe one miss, not two; the slots live in their own
// mapping, 2 MiB-aligned and marked for transparent huge pages (madvise), so a probe needs no
// page walk; fresh pages come zeroed from the kernel (no clearing pass when the table grows).
constexpr std::size_t kMaxForgottenSlots = std::size_t{1} << 22;
class ForgottenTokens {
 public:
  static constexpr std::uint8_t kKnown = 1, kSpent = 2, kPublished = 4, kRequest = 8;
  static constexpr std::uint64_t kFlagBits = 0xF;
  // The key of a token in this table and in the grant table (never 0).
  static std::uint64_t hash(std::string_view token) {
    std::uint64_t h = std::hash<std::string_view>{}(token);
    h ^= h >> 33;  // spread the bits
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h ? h : 1;
  }
  ForgottenTokens() = default;
  ForgottenTokens(const ForgottenTokens&) = delete;
  ForgottenTokens& operator=(const ForgottenTokens&) = delete;
  ~ForgottenTokens() { free(block_); }

  // Remembers a token by its hash(); false when the table is full (the caller must then stop
  // judging unknowns).
  bool addHash(std::uint64_t h, std::uint8_t flags) {
    if (!reserve(size_ + 1)) return false;
    const std::uint64_t tag = h & ~kFlagBits;
    std::uint64_t* slots = block_.slots;
    std::size_t i = index(h, block_.count);
    while (slots[i] != 0 && (slots[i] & ~kFlagBits) != tag) i = (i + 1) & (block_.count - 1);
    if (slots[i] == 0) ++size_;
    slots[i] = tag | flags | kKnown;
    return true;
  }
  // Room for `n` tokens without a resize; false when that would pass kMaxForgottenSlots.
  bool reserve(std::size_t n) {
    std::size_t count = block_.count ? block_.count : 8'192;
    while (2 * n > count) {
      if (count >= kMaxForgottenSlots) return false;
      count *= 2;
    }
    if (count != block_.count) resize(count);
    return true;
  }
  // Starts loading the slot of `h` (callers that know a key early overlap the miss with work).
  void prefetch(std::uint64_t h) const {
    if (block_.count) __builtin_prefetch(&block_.slots[index(h, block_.count)]);
  }
  // 0 when the token (by its hash()) was never forgotten; else its flags (kKnown set).
  std::uint8_t findHash(std::uint64_t h) const {
    if (!block_.count) return 0;
    const std::uint64_t tag = h & ~kFlagBits;
    const std::uint64_t* slots = block_.slots;
    for (std::size_t i = index(h, block_.count); slots[i] != 0; i = (i + 1) & (block_.count - 1))
      if ((slots[i] & ~kFlagBits) == tag) return static_cast<std::uint8_t>(slots[i] & kFlagBits);
    return 0;
  }
  std::size_t size() const { return size_; }

 private:
  // Zeroed slot storage: its own mapping (huge pages advised) from 2 MiB up, else the heap.
  struct Block {
    std::uint64_t* slots = nullptr;  // 0 = empty; else tag | flags (kKnown always set)
    std::size_t count = 0;           // a power of two (0 before the first add)
    void* mapping = nullptr;         // the mmap region holding slots (nullptr: heap)
    std::size_t mapping_bytes = 0;
  };
  Block block_;
  std::size_t size_ = 0;

  static std::size_t index(std::uint64_t h, std::size_t count) {
    return static_cast<std::size_t>(h >> 4) & (count - 1);  // the bits above the flags
  }
  static Block allocate(std::size_t count) {
    Block b;
    b.count = count;
    const std::size_t bytes = count * sizeof(std::uint64_t);
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    if (bytes >= kHuge) {
      const std::size_t len = bytes + kHuge;  // room to align the start to 2 MiB
      void* m = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m != MAP_FAILED) {
        b.mapping = m;
        b.mapping_bytes = len;
        b.slots = reinterpret_cast<std::uint64_t*>((reinterpret_cast<std::uintptr_t>(m) + kHuge - 1) & ~(kHuge - 1));
#ifdef MADV_HUGEPAGE
        ::madvise(b.slots, bytes, MADV_HUGEPAGE);  // advice only: without THP the table still works
#endif
        return b;  // anonymous pages are zero
      }
    }
    b.slots = static_cast<std::uint64_t*>(::operator new(bytes, std::align_val_t{64}));
    std::memset(b.slots, 0, bytes);
    return b;
  }
  static void free(const Block& b) {
    if (b.mapping) ::munmap(b.mapping, b.mapping_bytes);
    else if (b.slots) ::operator delete(b.slots, std::align_val_t{64});
  }
  void resize(std::size_t count) {
    Block fresh = allocate(count);
    for (std::size_t j = 0; j < block_.count; ++j) {
      const std::uint64_t v = block_.slots[j];
      if (v == 0) continue;
      std::size_t i = index(v, count);  // v's tag holds the hash's index bits
      while (fresh.slots[i] != 0) i = (i + 1) & (count - 1);
      fresh.slots[i] = v;
    }
    free(block_);
    block_ = fresh;
  }
};
// Plugin-side QUOTA-05: one second less the ±250 ms timing tolerance of RULES.md.
constexpr std::int64_t kRateWindowUs = 1000 * kUs - kToleranceUs;
constexpr std::size_t kMaxPendingEmits = 4'096;  // emits awaiting their result (EMIT-02)
constexpr std::size_t kMaxQuotaSessions = 65'536;

using SizeInfo = CompactSize;  // compactSize() (monitor.h): bytes of the compact form, numbers
// Our count is a LOWER bound of any compact serialisation except for numbers: RapidJSON writes
// strings in their shortest JSON form (raw UTF-8, the two-character escapes, \u00XX only where no
// short form exists, no escaped '/'), and no whitespace; another writer can only be longer there.
// Numbers may be spelt longer or shorter (1e3 vs 1000.0): up to 24 bytes each either way. So "over
// the limit" is certain when bytes − 24 × numbers exceeds it (QUOTA-01 is exact for a payload
// without numbers: 262,145 bytes is over, 262,144 is not), and bytes − 24 × numbers is the lower
// bound the quota window adds up.
std::size_t sizeTolerance(const SizeInfo& s) { return 24 * s.numbers; }

enum class Expect : std::uint8_t {
  Unknown,        // nothing certain
  NotInitialized, // row 1
  Context,        // rows 2–3
  Limits,         // row 4
  Capability,     // row 6 (when rows 2–5 certainly pass is not required: any later row only rejects)
};

struct Grant {
  // The session it was delivered for, as ForgottenTokens::hash(session_id): only compared (EMIT-05),
  // and a string here cost an allocation per delivered token (issue 6).
  std::uint64_t session_key = 0;
  std::int64_t t_us = 0;
  std::uint64_t line = 0;
  bool request = false;
  wire::RpcId request_id;
  bool ended = false;       // request answered
  std::uint64_t end_line = 0;
  bool spent = false;
  bool spent_published = true;  // the spending emit was published (EMIT-06) or not (EMIT-07)
  std::uint64_t spent_line = 0;
  std::int64_t spent_t_us = 0;
  // Set only on a grant restored from ForgottenTokens as spent: its first use's line is not kept.
  bool spent_line_unknown = false;
  // Delivered again after it was spent: a reuse then follows the engine's own re-delivery, so it is
  // not held against the plugin.
  bool redelivered_spent = false;
};

// The live grants by token key (ForgottenTokens::hash): a flat open-addressing table. Why not
// std::unordered_map (as before): a lookup there is a bucket load then a node load, two dependent
// cache misses per delivered or used token, and prune() walked scattered nodes. Here the keys are an
// array of their own (64 KiB at 8,192 slots: it stays in cache) probed without touching a grant, so
// the usual lookup — a token delivered for the first time — misses nothing, a hit loads one grant,
// and prune() is one sequential pass (issue 6: the node walks were the emit monitor's largest cost).
class GrantTable {
 public:
  std::size_t size() const { return size_; }
  Grant* find(std::uint64_t key) {
    if (keys_.empty()) return nullptr;
    for (std::size_t i = key & mask_; keys_[i] != 0; i = (i + 1) & mask_)
      if (keys_[i] == key) return &grants_[i];
    return nullptr;
  }
  // A fresh grant for a key that is not in the table (keys are never 0).
  Grant& add(std::uint64_t key) {
    if (2 * (size_ + 1) > keys_.size()) rehash(std::max<std::size_t>(64, 2 * keys_.size()));
    std::size_t i = key & mask_;
    while (keys_[i] != 0) i = (i + 1) & mask_;
    keys_[i] = key;
    grants_[i] = Grant{};
    ++size_;
    return grants_[i];
  }
  // Removes every grant for which dead(key, grant) holds, in one pass, then closes the gaps in
  // place (a linear-probing table cannot just blank a slot inside a probe run): no allocation.
  template <class Dead>
  void removeIf(Dead dead) {
    std::size_t run_start = keys_.size();  // a slot that was empty before this pass
    bool removed = false;
    for (std::size_t j = 0; j < keys_.size(); ++j) {
      if (keys_[j] == 0) {
        if (run_start == keys_.size()) run_start = j;
      } else if (dead(keys_[j], static_cast<const Grant&>(grants_[j]))) {
        keys_[j] = 0;
        --size_;
        removed = true;
      }
    }
    if (removed) closeGaps(run_start);
  }

 private:
  std::vector<std::uint64_t> keys_;  // 0: empty; a power of two, at most half full
  std::vector<Grant> grants_;        // grants_[i] belongs to keys_[i]
  std::size_t mask_ = 0, size_ = 0;

  // Moves every grant to the first free slot of its probe sequence, scanning once around the table
  // from `start`, a slot that was empty before the removals: no probe run crosses it, so each run is
  // processed from its beginning and a moved grant only ever goes back over slots already final.
  void closeGaps(std::size_t start) {
    for (std::size_t k = 1; k <= keys_.size(); ++k) {
      const std::size_t p = (start + k) & mask_;
      if (keys_[p] == 0) continue;
      std::size_t i = keys_[p] & mask_;
      while (i != p && keys_[i] != 0) i = (i + 1) & mask_;
      if (i != p) {
        keys_[i] = keys_[p];
        grants_[i] = std::move(grants_[p]);
        keys_[p] = 0;
      }
    }
  }
  void rehash(std::size_t count) {
    std::vector<std::uint64_t> old_keys(count, 0);
    std::vector<Grant> old_grants(count);
    old_keys.swap(keys_);
    old_grants.swap(grants_);
    mask_ = count - 1;
    for (std::size_t j = 0; j < old_keys.size(); ++j) {
      if (old_keys[j] == 0) continue;
      std::size_t i = old_keys[j] & mask_;
      while (keys_[i] != 0) i = (i + 1) & mask_;
      keys_[i] = old_keys[j];
      grants_[i] = std::move(old_grants[j]);
    }
  }
};

struct PendingEmit {
  std::string name, session;
  // Every value of a repeated "name" member: which duplicate a receiver keeps is its own choice
  // (FRAME-19, [impl]), so the result may echo any of them (a false EMIT-02 otherwise; fuzzer find).
  std::vector<std::string> other_names;
  std::uint64_t line = 0;
  std::int64_t t_us = 0;
  Expect expect = Expect::Unknown;
  std::string rule, why;       // the rule the expectation comes from and why
  std::size_t bytes_lo = 0;    // lower bound of the serialized event size (quota)
  bool token_certain = false;  // the token was certainly valid (quota rows are reachable)
  std::string token;
  std::uint64_t token_key = 0;  // ForgottenTokens::hash(token): the key of both token tables

  // Back to a fresh emit's state, keeping the strings' capacity (see PendingQueue).
  void reset() {
    name.clear();
    session.clear();
    other_names.clear();
    line = 0;
    t_us = 0;
    expect = Expect::Unknown;
    rule.clear();
    why.clear();
    bytes_lo = 0;
    token_certain = false;
    token.clear();
    token_key = 0;
  }
};

// The emits awaiting their result, oldest first: a ring of PendingEmit slots that are swapped in
// and out, never destroyed, so their strings keep their capacity and a steady stream of emits
// allocates nothing (a session id alone is 36 bytes, past std::string's inline buffer; issue 6).
class PendingQueue {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  PendingEmit& front() { return slots_[head_]; }
  // Appends `e` by swapping it with a spare slot: `e` is left holding that slot's old buffers.
  void pushSwap(PendingEmit& e) {
    if (size_ == slots_.size()) grow();
    std::swap(slots_[(head_ + size_) % slots_.size()], e);
    ++size_;
  }
  // Removes the front by swapping it into `out` (which gets its value; the slot gets out's buffers).
  void popSwap(PendingEmit& out) {
    std::swap(out, slots_[head_]);
    head_ = (head_ + 1) % slots_.size();
    --size_;
  }
  void clear() {
    head_ = 0;
    size_ = 0;
  }

 private:
  std::vector<PendingEmit> slots_;
  std::size_t head_ = 0, size_ = 0;

  void grow() {
    std::vector<PendingEmit> bigger(std::max<std::size_t>(8, 2 * slots_.size()));
    for (std::size_t i = 0; i < size_; ++i) std::swap(bigger[i], slots_[(head_ + i) % slots_.size()]);
    slots_.swap(bigger);
    head_ = 0;
  }
};

struct Window {
  bool init = false;
  std::int64_t s_lo = 0, s_hi = 0;  // the window started somewhere in [s_lo, s_hi]
  std::uint64_t used_lo = 0;        // admitted at least this much in the current window
};

class EmitMonitor : public Monitor {
 public:
  std::string_view name() const override { return "EMIT"; }

  void observe(const Observation& o, const ConnectionState& s, FindingSink& out) override {
    if (!o.decoded) return;
    if (o.fromEngine() && (o.msg.isRequest() || o.msg.isNotification())) delivery(o);
    if (o.fromPlugin() && o.match == Match::Matched) requestEnded(o);
    if (o.fromPlugin() && o.msg.method == m::kEmit && (o.msg.isNotification() || o.msg.isRequest()))
      emit(o, s, out);
    if (o.fromEngine() && o.isMethod(m::kEmitResult)) result(o, s, out);
  }

 private:
  // Keyed by ForgottenTokens::hash(token), the key forgotten_ keeps too: one hash per token use
  // serves both tables, and no token string is stored or compared (issue 6). Two live tokens
  // sharing a 64-bit key (~n²/2^65: 10^-10 for 65,536 grants) is the inexactness accepted above.
  GrantTable grants_;
  bool grants_full_ = false;
  std::size_t prune_at_ = kPruneFloor;
  ForgottenTokens forgotten_;
  std::vector<std::pair<std::uint64_t, std::uint8_t>> dead_;  // prune()'s batch (capacity reused)
  bool forgotten_full_ = false;  // kMaxForgottenSlots reached: unknown tokens are no longer judged
  PendingQueue pending_;
  PendingEmit scratch_, current_;  // the emit being judged / the result's emit (buffers reused)
  bool pending_overflow_ = false;
  std::unordered_map<std::string, std::pair<Window, Window>> quota_;  // session → (second, minute)
  // Plugin-side QUOTA-05: the last 41 emit times per session (bounded by kMaxQuotaSessions).
  // QUOTA-05: 40 per second, so 41 emits inside the window break it.
  static constexpr std::size_t kRateRing = protocol::limits::kEmitRatePerSecond + 1;
  struct Rate {
    std::array<std::int64_t, kRateRing> times{};
    std::size_t next = 0, count = 0;
    bool reported = false;
  };
  std::unordered_map<std::string, Rate> rate_;
  bool init14_reported_ = false;
  // Session ids by Grant::session_key, for EMIT-05's message (bounded like the quota tables). A
  // connection delivers for few sessions, mostly the same one in a row: one comparison per delivery.
  std::unordered_map<std::uint64_t, std::string> session_names_;
  std::uint64_t last_session_key_ = 0;

  std::uint64_t sessionKey(std::string_view session) {
    const std::uint64_t key = ForgottenTokens::hash(session);
    if (key != last_session_key_) {
      last_session_key_ = key;
      if (session_names_.size() < kMaxQuotaSessions) session_names_.try_emplace(key, session);
    }
    return key;
  }

  void delivery(const Observation& o) {
    std::string_view token = str(member(o.msg.params, "context_id"));
    if (token.empty()) return;
    // A new token needs a probe of forgotten_ (a cache miss): start it before the grant lookup.
    const std::uint64_t key = ForgottenTokens::hash(token);
    forgotten_.prefetch(key);
    Grant* found = grants_.find(key);
    if (!found) {
      if (grants_.size() >= prune_at_) {
        prune(o.t());
        prune_at_ = std::clamp(2 * grants_.size(), kPruneFloor, kMaxGrants);
        if (grants_.size() >= kMaxGrants) {
          grants_full_ = true;
          return;
        }
      }
      found = &grants_.add(key);
      const std::uint8_t was = forgotten_.findHash(key);
      if (was & ForgottenTokens::kSpent) {
        // A forgotten spent token delivered again stays spent (§11.3); the plugin got it anew.
        Grant& g = *found;
        g.spent = true;
        g.spent_published = (was & ForgottenTokens::kPublished) != 0;
        g.spent_line_unknown = true;
        g.spent_t_us = o.t();
        g.redelivered_spent = true;
        g.session_key = sessionKey(str(member(o.msg.params, "session_id")));
        g.line = o.line();
        return;
      }
    } else if (found->spent) {
      found->redelivered_spent = true;
      return;  // once spent, a token stays spent (§11.3)
    }
    Grant& g = *found;
    g.session_key = sessionKey(str(member(o.msg.params, "session_id")));
    g.t_us = o.t();
    g.line = o.line();
    g.request = o.msg.isRequest();
    g.request_id = o.msg.id;
    g.ended = false;
  }

  // Forgets the dead grants: expired notification grants and ended request grants that were never
  // used, and tokens spent more than kSpentMemoryUs ago (their emit_result has long arrived). Before,
  // spent tokens were never forgotten: on a long trace the table filled up for good, every later
  // token went unjudged and every delivery re-scanned the full table. Every later use of a forgotten
  // token is a rejection; forgotten_ remembers them exactly (with what they were), so such a use is
  // judged under the right rule, and a re-delivery of a spent one stays spent.
  //
  // The dead are collected first and then added with their slots prefetched a few ahead: each add
  // is a miss in a table far larger than the caches, and in a batch the misses overlap.
  void prune(std::int64_t now) {
    dead_.clear();
    grants_.removeIf([&](std::uint64_t key, const Grant& g) {
      bool dead = g.spent ? now - g.spent_t_us > kSpentMemoryUs
                          : ((g.request && g.ended) || (!g.request && now - g.t_us > 2 * kGrantUs));
      if (dead) {
        const std::uint8_t flags = (g.spent ? ForgottenTokens::kSpent : 0) |
                                   (g.spent && g.spent_published ? ForgottenTokens::kPublished : 0) |
                                   (g.request ? ForgottenTokens::kRequest : 0);
        dead_.push_back({key, flags});
      }
      return dead;
    });
    // Added in the order found, as one add at a time did: a full table keeps the same first ones.
    if (!forgotten_.reserve(forgotten_.size() + dead_.size())) {
      for (const auto& [h, flags] : dead_)
        if (!forgotten_.addHash(h, flags)) forgotten_full_ = true;
      return;
    }
    constexpr std::size_t kAhead = 8;
    for (std::size_t i = 0; i < dead_.size(); ++i) {
      if (i + kAhead < dead_.size()) forgotten_.prefetch(dead_[i + kAhead].first);
      forgotten_.addHash(dead_[i].first, dead_[i].second);
    }
  }

  void requestEnded(const Observation& o) {
    const std::string& token = o.request->context_id;
    if (token.empty()) return;
    Grant* g = grants_.find(ForgottenTokens::hash(token));
    if (g && g->request && g->request_id == o.request->id) {
      g->ended = true;
      g->end_line = o.line();
    }
  }

  void emit(const Observation& o, const ConnectionState& s, FindingSink& out) {
    const Handshake& hs = s.handshake();
    if (o.msg.isRequest()) {
      out.report("EMIT-01", reports::kBindsPlugin, "plugin/emit was sent as a request",
                 "a notification without id", fmt::format("id {}", o.msg.id.render()), {o.evidence()});
      return;  // a request is not an emit (PROTOCOL §3.2): answered -32601 (§3.5), no emit_result due
    }
    const json::Value* p = o.msg.params;
    if (!p || !p->IsObject()) return;  // RPC-11; R4 treats it as fatal (EMIT-22)
    // The payload is walked once per emit (QUOTA-01 and the quota bytes share the result).
    const json::Value* payload = member(p, "payload");
    std::optional<SizeInfo> size;
    if (payload) size = compactSize(*payload);
    PendingEmit& e = scratch_;
    e.reset();
    e.name.assign(str(member(p, "name")));
    // Only a frame with repeated member names can hold a second "name" (the reader lists every
    // repeat, FRAME-19): other frames skip the walk and the allocation. No list: walk.
    if (p && p->IsObject() && (!o.ev->duplicates || !o.ev->duplicates->empty()))
      for (auto it = p->MemberBegin(); it != p->MemberEnd(); ++it)
        if (std::string_view(it->name.GetString(), it->name.GetStringLength()) == "name" && it->value.IsString())
          e.other_names.emplace_back(it->value.GetString(), it->value.GetStringLength());
    e.session.assign(str(member(p, "session_id")));
    e.token.assign(str(member(p, "context_id")));
    e.token_key = ForgottenTokens::hash(e.token);
    e.line = o.line();
    e.t_us = o.t();
    if (!hs.result_line) {
      e.expect = Expect::NotInitialized;
      e.rule = "EMIT-21";
      e.why = "the handshake had not completed";
    } else if (hs.ok) {
      judgeToken(e, o);
      if (e.token_certain) judgeLimits(e, size);
      if (e.expect == Expect::Unknown && e.token_certain && !hs.publish_bus) {
        e.expect = Expect::Capability;
        e.rule = "EMIT-20";
        e.why = "the plugin did not declare publish_bus";
      }
    }
    if (hs.ok) pluginSide(e, o, size, hs, out);
    if (size) e.bytes_lo = size->bytes > sizeTolerance(*size) ? size->bytes - sizeTolerance(*size) : 0;
    if (pending_.size() >= kMaxPendingEmits) {
      pending_overflow_ = true;
      return;
    }
    pending_.pushSwap(e);
  }

  // The plugin's side of an emit (see the file comment). Called after judgeToken/judgeLimits.
  void pluginSide(const PendingEmit& e, const Observation& o, const std::optional<SizeInfo>& size,
                  const Handshake& hs, FindingSink& out) {
    if (!hs.publish_bus && !init14_reported_) {
      init14_reported_ = true;
      out.report("INIT-14", reports::kBindsPlugin, "the plugin emits without having declared publish_bus",
                 "a plugin declares every capability it uses (publish_bus:true to emit)",
                 "plugin/emit with publish_bus:false", {o.evidence()});
    }
    // An absent or empty context_id is a shape breach (EMIT-01, rpc_monitor), not a token to judge.
    if (e.token.empty()) {
    } else if (e.expect == Expect::Context && !(e.rule == "EMIT-06" || e.rule == "EMIT-07")) {
      out.report(e.rule, reports::kBindsPlugin, fmt::format("the plugin emitted with an invalid token: {}", e.why),
                 "an emit with a token delivered to this plugin, for its session, unused and still valid",
                 fmt::format("context_id \"{}\"", e.token), {o.evidence()}, /*advisory=*/true);
    } else if (e.expect == Expect::Context) {
      const Grant* g = grants_.find(e.token_key);
      std::vector<Evidence> ev{o.evidence()};
      if (g && !g->spent_line_unknown) ev.push_back({g->spent_line, "first use"});
      if (!g || !g->redelivered_spent)
        out.report("EMIT-06", reports::kBindsPlugin, fmt::format("the plugin used a token twice: {}", e.why),
                   "one emit per token (tokens are one-shot)", fmt::format("context_id \"{}\" again", e.token),
                   std::move(ev), /*advisory=*/true);
    }
    auto chars = protocol::utf8Length(e.name);
    if (!chars || *chars == 0 || *chars > protocol::limits::kEmitNameMaxChars || !protocol::isControlFree(e.name))
      out.report("QUOTA-02", reports::kBindsPlugin, "the plugin emitted an event name out of limits",
                 "1–128 characters, no control character", fmt::format("{} characters", chars.value_or(0)),
                 {o.evidence()}, /*advisory=*/true);
    if (size && size->bytes > protocol::limits::kEmitPayloadMaxBytes + sizeTolerance(*size))
      out.report("QUOTA-01", reports::kBindsPlugin, "the plugin emitted a payload over 256 KiB",
                 fmt::format("at most {} bytes serialized compactly", protocol::limits::kEmitPayloadMaxBytes),
                 fmt::format("about {} bytes", size->bytes), {o.evidence()}, /*advisory=*/true);
    if (e.expect != Expect::Unknown) return;
    auto it = rate_.find(e.session);
    if (it == rate_.end()) {
      if (rate_.size() >= kMaxQuotaSessions) return;
      it = rate_.emplace(e.session, Rate{}).first;
    }
    Rate& r = it->second;
    // Ring of the last kRateRing emit times: `next` is the oldest once the ring is full.
    const std::int64_t oldest = r.times[r.next];
    r.times[r.next] = o.t();
    r.next = (r.next + 1) % kRateRing;
    if (r.count < kRateRing) ++r.count;
    if (!r.reported && r.count == kRateRing && o.t() - oldest < kRateWindowUs) {
      r.reported = true;
      const auto limit = protocol::limits::kEmitRatePerSecond;
      out.report("QUOTA-05", reports::kBindsPlugin,
                 fmt::format("the plugin emitted more than {} events for one session within one second", limit),
                 fmt::format("at most {} emits per (plugin, session) per second", limit),
                 fmt::format("{} emits within {} ms", kRateRing, (o.t() - oldest) / kUs), {o.evidence()},
                 /*advisory=*/true);
    }
  }

  void judgeToken(PendingEmit& e, const Observation& o) {
    Grant* found = grants_.find(e.token_key);
    if (!found) {
      const std::uint8_t was = forgotten_.findHash(e.token_key);
      if (!was) {
        if (grants_full_ || forgotten_full_) return;
        e.expect = Expect::Context;
        e.rule = "EMIT-04";
        e.why = "the context_id was never delivered to this plugin";
        return;
      }
      // Forgotten (see ForgottenTokens): what it was decides the rule; this use spends it.
      e.expect = Expect::Context;
      if (was & ForgottenTokens::kSpent) {
        e.rule = (was & ForgottenTokens::kPublished) ? "EMIT-06" : "EMIT-07";
        e.why = "the token was already used (more than 60 s of trace time earlier; the line is not kept)";
      } else if (was & ForgottenTokens::kRequest) {
        e.rule = "EMIT-08";
        e.why = "its request was answered (more than 60 s of trace time earlier)";
      } else {
        e.rule = "EMIT-10";
        e.why = "the notification token was delivered more than 10 s earlier";
      }
      if (!(was & ForgottenTokens::kSpent))  // the first use spends it (published until told otherwise)
        forgotten_.addHash(e.token_key, static_cast<std::uint8_t>(was | ForgottenTokens::kSpent | ForgottenTokens::kPublished));
      return;
    }
    Grant& g = *found;
    if (g.spent) {
      e.expect = Expect::Context;
      e.rule = g.spent_published ? "EMIT-06" : "EMIT-07";
      e.why = g.spent_line_unknown ? std::string("the token was already used (more than 60 s of trace time earlier)")
                                   : fmt::format("the token was already used at line {}", g.spent_line);
    } else if (g.request && g.ended) {
      e.expect = Expect::Context;
      e.rule = "EMIT-08";
      e.why = fmt::format("its request (line {}) was answered at line {}", g.line, g.end_line);
    } else if (!g.request && o.t() - g.t_us > kGrantUs + kToleranceUs) {
      e.expect = Expect::Context;
      e.rule = "EMIT-10";
      e.why = fmt::format("the token delivered at line {} is {} ms old (limit {} ms)", g.line,
                          (o.t() - g.t_us) / kUs, protocol::limits::kNotificationGrantMs);
    } else if (ForgottenTokens::hash(e.session) != g.session_key) {
      e.expect = Expect::Context;
      e.rule = "EMIT-05";
      auto known = session_names_.find(g.session_key);
      e.why = known != session_names_.end()
                  ? fmt::format("the token was delivered for session {} (line {})", known->second, g.line)
                  : fmt::format("the token was delivered for another session (line {})", g.line);
    } else if (g.request || o.t() - g.t_us < kGrantUs - kToleranceUs) {
      e.token_certain = true;
    }
    // The first use spends the token whatever the outcome (§11.3); whether it was published is
    // known only from the result, so spent_published is fixed there.
    if (!g.spent) {
      g.spent = true;
      g.spent_line = e.line;
      g.spent_t_us = e.t_us;
      g.spent_published = true;
    }
  }

  void judgeLimits(PendingEmit& e, const std::optional<SizeInfo>& size) {
    auto chars = protocol::utf8Length(e.name);
    if (!chars || *chars == 0 || *chars > protocol::limits::kEmitNameMaxChars || !protocol::isControlFree(e.name)) {
      e.expect = Expect::Limits;
      e.rule = "QUOTA-02";
      e.why = "the name is empty, longer than 128 characters or contains a control character";
      return;
    }
    if (size && size->bytes > protocol::limits::kEmitPayloadMaxBytes + sizeTolerance(*size)) {
      e.expect = Expect::Limits;
      e.rule = "QUOTA-01";
      e.why = fmt::format("the payload serializes to about {} bytes (limit {})", size->bytes,
                          protocol::limits::kEmitPayloadMaxBytes);
    }
  }

  void result(const Observation& o, const ConnectionState& s, FindingSink& out) {
    const json::Value* p = o.msg.params;
    std::string_view name = str(member(p, "name"));
    std::string_view bus = str(member(p, "bus"));
    std::string_view durable = str(member(p, "durable"));
    if (pending_.empty()) {
      if (!pending_overflow_ && s.handshake().request_line)
        out.report("EMIT-02", reports::kBindsEngine, "plugin/emit_result without a plugin/emit to answer",
                   "one result per emit", "an extra plugin/emit_result", {o.evidence()});
      return;
    }
    PendingEmit& e = current_;
    pending_.popSwap(e);
    const RequestEvidence ev(e.line, "plugin/emit", o);
    if (name != e.name && std::find(e.other_names.begin(), e.other_names.end(), name) == e.other_names.end()) {
      out.report("EMIT-02", reports::kBindsEngine,
                 "emit results are missing, extra or out of order (the name does not echo the next emit)",
                 fmt::format("name \"{}\" (emit at line {})", e.name, e.line), fmt::format("name \"{}\"", name), ev);
      pending_.clear();  // correlation is lost; judging further results would only repeat this
      pending_overflow_ = true;
      return;
    }
    const protocol::Profile& prof = s.effectiveProfile();
    bool published = bus == "published";
    if (prof.id() == protocol::Profile::Id::V006 && !durable.empty() && durable != "rejected")
      out.report("EMIT-16", reports::kBindsEngine, "the legacy durable route was not rejected",
                 "durable \"rejected\"", fmt::format("durable \"{}\"", durable), ev);
    // EMIT-17 [chosen]: with publish_session_events the result explains the rejected durable route
    // and points to plugin/producer/send. Judged on published results only (a rejection's reason
    // names the rejection).
    if (prof.id() == protocol::Profile::Id::V006 && published && s.handshake().publish_session_events &&
        str(member(p, "reason")).find("plugin/producer/send") == std::string_view::npos)
      out.report("EMIT-17", reports::kBindsEngine,
                 "the result does not explain the rejected durable route",
                 "a reason naming the durable route and pointing to plugin/producer/send",
                 member(p, "reason") ? fmt::format("reason \"{}\"", str(member(p, "reason"))) : "no reason", ev);
    auto fail = [&](std::string expected) {
      out.report(e.rule, reports::kBindsEngine, fmt::format("an emit was published although {}", e.why),
                 std::move(expected), fmt::format("bus \"{}\"", bus), ev);
    };
    switch (e.expect) {
      case Expect::NotInitialized:
        if (published) fail("bus \"rejected\", durable \"rejected\" (plugin is not initialized)");
        break;
      case Expect::Context: {
        std::string want(protocol::toString(prof.contextRejectionBusStatus()));
        if (published) {
          fail(fmt::format("bus \"{}\" (context rejected)", want));
        } else if (bus != want) {
          out.report("EMIT-15", reports::kBindsEngine, "a context rejection used another bus status",
                     fmt::format("bus \"{}\" in profile {}", want, prof.name()), fmt::format("bus \"{}\"", bus), ev);
        }
        break;
      }
      case Expect::Limits:
        if (published) fail("bus \"dropped\" with an oversized_event diagnostic");
        else if (bus != "dropped")
          out.report("QUOTA-04", reports::kBindsEngine, "a name/size violation used another bus status",
                     "bus \"dropped\"", fmt::format("bus \"{}\"", bus), ev);
        break;
      case Expect::Capability:
        if (published) fail("bus \"rejected\"");
        break;
      case Expect::Unknown:
        break;
    }
    // The token's first use was not published: a later reuse that IS published breaks only the
    // [impl] rule EMIT-07 (R4 consumes on any first use), not EMIT-06.
    if (!published) {
      Grant* g = grants_.find(e.token_key);
      if (g && g->spent_line == e.line) g->spent_published = false;
    }
    quota(e, o, published, bus, out, ev);
  }

  // QUOTA-05/06 with the engine's check time c ∈ [emit t, result t] (see file comment).
  void quota(const PendingEmit& e, const Observation& o, bool published, std::string_view bus,
             FindingSink& out, const RequestEvidence& ev) {
    auto it = quota_.find(e.session);
    if (it == quota_.end()) {
      if (quota_.size() >= kMaxQuotaSessions) return;
      it = quota_.emplace(e.session, std::pair<Window, Window>{}).first;
    }
    // Did this emit certainly reach the quota row? Published ones did; context/limit failures did not.
    bool checked = published || (e.expect == Expect::Unknown && e.token_certain && bus == "dropped");
    bool maybe_checked = e.expect != Expect::Context && e.expect != Expect::Limits && e.expect != Expect::NotInitialized;
    if (!maybe_checked) return;
    const std::int64_t lo = e.t_us, hi = o.t();
    auto step = [&](Window& w, std::int64_t len_us, std::uint64_t limit, std::uint64_t add, const char* rule,
                    const char* what) {
      if (!w.init) {
        if (!checked) return;
        w = {true, lo, hi, 0};
      } else if (lo - w.s_hi >= len_us) {  // certainly a new window (if checked at all)
        if (checked) w = {true, lo, hi, 0};
        else w = {true, w.s_lo, hi, 0};
      } else if (hi - w.s_lo >= len_us) {  // maybe a new window: keep only what holds either way
        w = {true, w.s_lo, hi, 0};
      }
      if (!published) return;
      if (w.used_lo + add > limit)
        out.report(rule, reports::kBindsEngine, fmt::format("an emit was published beyond the {} quota", what),
                   "bus \"dropped\" with a rate_limited diagnostic",
                   fmt::format("published although at least {} were already admitted in the current window",
                               w.used_lo),
                   ev);
      w.used_lo += add;
    };
    step(it->second.first, static_cast<std::int64_t>(protocol::limits::kQuotaSecondWindowMs) * kUs,
         protocol::limits::kEmitRatePerSecond, 1, "QUOTA-05", "40 per second");
    step(it->second.second, static_cast<std::int64_t>(protocol::limits::kQuotaMinuteWindowMs) * kUs,
         protocol::limits::kEmitBytesPerMinute, e.bytes_lo, "QUOTA-06", "4 MiB per minute");
  }
};

}  // namespace

std::unique_ptr<Monitor> makeEmitMonitor() { return std::make_unique<EmitMonitor>(); }

}  // namespace conform::rules
