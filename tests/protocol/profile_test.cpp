// tests/protocol/profile_test.cpp — method tables, profile parameters, rule attribution of
// validate(), the shared validation helpers and the semantic checks (tool output, emit limits,
// declarations, delivery classes).
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "core/protocol/emit.h"
#include "core/protocol/events.h"
#include "core/protocol/hooks.h"
#include "core/protocol/limits.h"
#include "core/protocol/profile.h"
#include "core/protocol/tools.h"
#include "core/protocol/validate.h"

namespace cp = conform::protocol;
namespace json = conform::json;

namespace {
json::Document doc(const std::string& text) {
  auto p = json::parse(text);
  REQUIRE(p.has_value());
  return std::move(p->doc);
}
}  // namespace

TEST_CASE("HOOK-03 RPC-13 method tables: 27 methods in 0.0.6, 21 in 0.0.4", "[protocol][methods]") {
  const cp::Profile& v6 = cp::profileV006();
  const cp::Profile& v4 = cp::profileV004();
  CHECK(v6.methods().size() == 27);
  CHECK(v4.methods().size() == 21);
  std::set<std::string_view> names;
  for (const auto& m : v6.methods()) names.insert(m.name);
  CHECK(names.size() == 27);
  int hooks = 0;
  for (cp::Hook h : cp::allHooks()) {
    REQUIRE(v4.findMethod(cp::hookMethod(h)) != nullptr);
    CHECK(cp::hookOfMethod(cp::hookMethod(h)) == h);
    CHECK(cp::parseHook(cp::toString(h)) == h);
    ++hooks;
  }
  CHECK(hooks == 13);
  CHECK(v4.findMethod(cp::method::kProducerSend) == nullptr);
  CHECK(v4.findMethod(cp::method::kRecoveryStart) == nullptr);
  const cp::MethodInfo* start = v6.findMethod(cp::method::kRecoveryStart);
  REQUIRE(start);
  CHECK(start->kind == cp::MessageKind::Notification);
  CHECK(start->direction == cp::Direction::EngineToPlugin);
  const cp::MethodInfo* complete = v6.findMethod(cp::method::kRecoveryComplete);
  REQUIRE(complete);
  CHECK(complete->kind == cp::MessageKind::Request);
  CHECK(complete->direction == cp::Direction::PluginToEngine);
  CHECK(v6.findMethod(cp::method::kEmit)->direction == cp::Direction::PluginToEngine);
  CHECK(v6.findMethod("plugin/producer/create") == nullptr);  // PROD-38: no aliases
  auto bad = v4.validate(cp::method::kProducerRegister, cp::Part::Params, doc("{}"));
  REQUIRE(bad);
  CHECK(bad->rule_id == "RPC-13");
  auto ntf = v6.validate(cp::method::kEmit, cp::Part::Result, doc("{}"));
  REQUIRE(ntf);
  CHECK(ntf->rule_id == "RPC-16");
}

TEST_CASE("INIT-10 profiles are found by version or name — 0.0.5 is no profile", "[protocol][profile]") {
  REQUIRE(cp::findProfile("0.0.6") == &cp::profileV006());
  REQUIRE(cp::findProfile("v004") == &cp::profileV004());
  CHECK(cp::findProfile("0.0.5") == nullptr);
  CHECK(cp::findProfile("") == nullptr);
  CHECK(cp::allProfiles().size() == 2);
  CHECK(cp::profileV006().version() == "0.0.6");
  CHECK(cp::profileV004().version() == "0.0.4");
}

TEST_CASE("QUOTA-17 EMIT-15 TOOL-14 profile parameters differ as DELTA §1 says", "[protocol][profile]") {
  const cp::Profile& v6 = cp::profileV006();
  const cp::Profile& v4 = cp::profileV004();
  CHECK(v6.diagnosticKinds().size() == 11);
  CHECK(v4.diagnosticKinds().size() == 9);
  CHECK(v6.contextRejectionBusStatus() == cp::EmitStatus::Rejected);
  CHECK(v4.contextRejectionBusStatus() == cp::EmitStatus::Dropped);
  CHECK(v6.isErrorFailsCall());
  CHECK_FALSE(v4.isErrorFailsCall());
  CHECK(v6.hasProducerMessaging());
  CHECK_FALSE(v4.hasProducerMessaging());
  CHECK(v6.limits().size() > v4.limits().size());
  for (const auto& l : v6.limits()) {
    INFO(l.name);
    CHECK_FALSE(l.rule.empty());
    CHECK_FALSE(l.section.empty());
  }
}

TEST_CASE("FRAME-06 EMIT-23 QUOTA-05 PROD-11 limits carry the spec's numbers", "[protocol][limits]") {
  namespace L = cp::limits;
  STATIC_REQUIRE(L::kMaxFrameBytes == 4'194'304);
  STATIC_REQUIRE(L::kEmitPayloadMaxBytes == 256 * 1024);
  STATIC_REQUIRE(L::kEmitSerializedEventMaxBytes == 272 * 1024);
  STATIC_REQUIRE(L::kEmitRatePerSecond == 40);
  STATIC_REQUIRE(L::kIdempotencyKeyMaxBytes == 256);
  STATIC_REQUIRE(L::kDescriptionMaxBytes == 1024);
  STATIC_REQUIRE(cp::errc::kPluginBusy == -32050);
  STATIC_REQUIRE(cp::errc::kProducerUnavailable == -32040);
}

TEST_CASE("INIT-16 INIT-17 TOOL-04 TOOL-10 validate() names the most specific rule", "[protocol][profile]") {
  const cp::Profile& v6 = cp::profileV006();
  const std::string caps =
      R"("capabilities":{"tools":true,"resources":false,"subscribe_events":false,"subscribe_bus":false,"publish_bus":false,"publish_session_events":false,"producer_messaging":false,"intercept":[)";
  auto unknownHook = v6.validate(cp::method::kInitialize, cp::Part::Result,
                                 doc(R"({"protocol_version":"0.0.6","name":"n","version":"1",)" + caps +
                                     R"("tool_before_run"]},"tools":[]})"));
  REQUIRE(unknownHook);
  CHECK(unknownHook->rule_id == "INIT-16");
  auto missingProducer = v6.validate(
      cp::method::kInitialize, cp::Part::Result,
      doc(R"({"protocol_version":"0.0.6","name":"n","version":"1","capabilities":{"tools":true,"resources":false,"subscribe_events":false,"subscribe_bus":false,"publish_bus":false,"publish_session_events":false,"intercept":[]},"tools":[]})"));
  REQUIRE(missingProducer);
  CHECK(missingProducer->rule_id == "INIT-17");
  auto wrongVersion = v6.validate(cp::method::kInitialize, cp::Part::Result,
                                  doc(R"({"protocol_version":"0.0.5","name":"n","version":"1",)" + caps +
                                      R"(]},"tools":[]})"));
  REQUIRE(wrongVersion);
  CHECK(wrongVersion->rule_id == "INIT-10");
  auto badOutput = v6.validate(
      cp::method::kInitialize, cp::Part::Result,
      doc(R"({"protocol_version":"0.0.6","name":"n","version":"1",)" + caps +
          R"(]},"tools":[{"name":"t","description":"d","parameters":{},"permission_name":"p","primary_resource_param":null,"output":{"kind":"named","streams":["1","2","3","4","5","6","7","8","9"]}}]})"));
  REQUIRE(badOutput);
  CHECK(badOutput->rule_id == "TOOL-04");
  auto legacy = v6.validate(cp::method::kToolsCall, cp::Part::Result, doc(R"({"content":"x","is_error":false})"));
  REQUIRE(legacy);
  CHECK(legacy->rule_id == "TOOL-10");
  auto ok004 = cp::profileV004().validate(cp::method::kToolsCall, cp::Part::Result,
                                          doc(R"({"content":"x","is_error":false})"));
  CHECK_FALSE(ok004.has_value());
  // PROD-11: 256 bytes accepted, 257 refused (a byte bound the schema cannot express in characters).
  auto send = [&](const std::string& key) {
    return v6.validate(cp::method::kProducerSend, cp::Part::Params,
                       doc(R"({"session_id":"0191c0de-0000-7000-8000-000000000001","producer_id":"0191c0de-0000-7000-8000-0000000000aa","mode":"queue","idempotency_key":")" +
                           key + R"(","description":"d","body":"b"})"));
  };
  CHECK_FALSE(send(std::string(256, 'k')).has_value());
  auto longKey = send(std::string(257, 'k'));
  REQUIRE(longKey);
  CHECK(longKey->rule_id == "PROD-11");
  std::string multibyte;
  for (int i = 0; i < 86; ++i) multibyte += "\xC3\xA9";  // 86 chars, 172 bytes: fine
  CHECK_FALSE(send(multibyte).has_value());
  multibyte.clear();
  for (int i = 0; i < 129; ++i) multibyte += "\xC3\xA9";  // 129 chars but 258 bytes
  auto mb = send(multibyte);
  REQUIRE(mb);
  CHECK(mb->rule_id == "PROD-11");
  auto mode = send("\\t");
  REQUIRE(mode);
  CHECK(mode->rule_id == "PROD-11");
}

TEST_CASE("validation helpers: snake_case, control-free, nonblank, stream names, UUID, date-time", "[protocol][validate]") {
  CHECK(cp::isSnakeCase("issue_read"));
  CHECK(cp::isSnakeCase("a1_b2"));
  for (auto bad : {"", "EchoTool", "_a", "a_", "a__b", "1a", "a-b", "a b"}) {
    INFO(bad);
    CHECK_FALSE(cp::isSnakeCase(bad));
  }
  CHECK(cp::isControlFree("héllo ✓"));
  CHECK_FALSE(cp::isControlFree("a\tb"));
  CHECK_FALSE(cp::isControlFree("a\x7f"));
  CHECK_FALSE(cp::isControlFree("a\xC2\x85"));  // U+0085 is Cc
  CHECK_FALSE(cp::isControlFree("\xFF"));
  CHECK(cp::isNonblank(" x "));
  CHECK_FALSE(cp::isNonblank(""));
  CHECK_FALSE(cp::isNonblank(" \t\n\xE3\x80\x80"));  // U+3000 ideographic space
  CHECK(cp::isUriSafeStreamName("results-2.x_~"));
  CHECK(cp::isUriSafeStreamName(std::string(64, 'a')));
  CHECK_FALSE(cp::isUriSafeStreamName(std::string(65, 'a')));
  CHECK_FALSE(cp::isUriSafeStreamName(""));
  CHECK_FALSE(cp::isUriSafeStreamName("a/b"));
  CHECK(cp::utf8Length("h\xC3\xA9\xF0\x9F\x98\x80") == 3u);
  CHECK_FALSE(cp::utf8Length("\xC3").has_value());
  CHECK_FALSE(cp::utf8Length("\xED\xA0\x80").has_value());  // surrogate
  CHECK(cp::isUuid("0191c0de-0000-7000-8000-000000000001"));
  CHECK_FALSE(cp::isUuid("0191c0de00007000800000000000000001"));
  CHECK(cp::isDateTime("2025-01-02T03:04:05Z"));
  CHECK(cp::isDateTime("2025-01-02T03:04:05.123456+02:00"));
  CHECK_FALSE(cp::isDateTime("2025-01-02 03:04:05Z"));
  CHECK_FALSE(cp::isDateTime("2025-13-02T03:04:05Z"));
  CHECK_FALSE(cp::isDateTime("2025-01-02T03:04:05"));
}

TEST_CASE("EVT-13 delivery classes: chunk, ordinary, terminal", "[protocol][event]") {
  CHECK(cp::classifyEvent(doc(R"({"type":"tool_call_progress","output_chunk":"x"})")) == cp::DeliveryClass::Chunk);
  CHECK(cp::classifyEvent(doc(R"({"type":"tool_call_progress","output_chunk":null})")) ==
        cp::DeliveryClass::Ordinary);
  CHECK(cp::classifyEvent(doc(R"({"type":"tool_call_progress"})")) == cp::DeliveryClass::Ordinary);
  CHECK(cp::classifyEvent(doc(R"({"type":"tool_call_terminated"})")) == cp::DeliveryClass::Terminal);
  CHECK(cp::classifyEvent(doc(R"({"type":"future"})")) == cp::DeliveryClass::Ordinary);
  CHECK(cp::classifyEvent(doc("[]")) == cp::DeliveryClass::Ordinary);
}

TEST_CASE("TOOL-11 TOOL-12 a named output lists each declared stream exactly once", "[protocol][tool]") {
  cp::ToolOutputDeclaration named{cp::OutputKind::Named, {"results", "errors"}};
  cp::ToolOutput ok{cp::OutputKind::Named, "", {{"errors", ""}, {"results", "r"}}};
  CHECK_FALSE(cp::checkToolOutput(named, ok).has_value());
  cp::ToolOutput missing{cp::OutputKind::Named, "", {{"results", "r"}}};
  CHECK(cp::checkToolOutput(named, missing).has_value());
  cp::ToolOutput twice{cp::OutputKind::Named, "", {{"results", "r"}, {"errors", ""}, {"results", "x"}}};
  CHECK(cp::checkToolOutput(named, twice).has_value());
  cp::ToolOutput extra{cp::OutputKind::Named, "", {{"results", "r"}, {"errors", ""}, {"debug", ""}}};
  CHECK(cp::checkToolOutput(named, extra).has_value());
  cp::ToolOutput single{cp::OutputKind::Single, "t", {}};
  CHECK(cp::checkToolOutput(named, single).has_value());
  CHECK_FALSE(cp::checkToolOutput(cp::ToolOutputDeclaration{}, single).has_value());
}

TEST_CASE("INIT-20 INIT-21 declaration checks of handshake step 6", "[protocol][tool]") {
  auto decl = [](std::string name, std::string perm, std::string params, std::optional<std::string> primary) {
    cp::ToolDeclaration d;
    d.name = std::move(name);
    d.description = "d";
    d.permission_name = std::move(perm);
    d.parameters = cp::JsonValue::fromText(params);
    d.primary_resource_param = std::move(primary);
    return d;
  };
  const std::string schema = R"({"type":"object","properties":{"path":{"type":"string"}}})";
  CHECK_FALSE(cp::checkToolDeclarations({decl("read_file", "fs_read", schema, "path")}).has_value());
  auto camel = cp::checkToolDeclarations({decl("EchoTool", "p", schema, std::nullopt)});
  REQUIRE(camel);
  CHECK(camel->rule_id == "INIT-20");
  CHECK(camel->path == "tools[0].name");
  auto dup = cp::checkToolDeclarations({decl("a", "p", schema, std::nullopt), decl("a", "p", schema, std::nullopt)});
  REQUIRE(dup);
  CHECK(dup->path == "tools[1].name");
  auto primary = cp::checkToolDeclarations({decl("a", "p", schema, "missing")});
  REQUIRE(primary);
  CHECK(primary->rule_id == "INIT-21");
  auto perm = cp::checkToolDeclarations({decl("a", "Perm", schema, std::nullopt)});
  REQUIRE(perm);
  CHECK(perm->path == "tools[0].permission_name");
}

TEST_CASE("EMIT-23 emit name and payload limits at their boundaries", "[protocol][emit]") {
  cp::EmitParams e;
  e.session_id = "0191c0de-0000-7000-8000-000000000001";
  e.context_id = "c";
  e.name = std::string(128, 'n');
  e.payload = cp::JsonValue::fromText("1");
  CHECK_FALSE(cp::checkEmitLimits("plugin", e).has_value());
  e.name = std::string(129, 'n');
  CHECK(cp::checkEmitLimits("plugin", e).has_value());
  e.name = "";
  CHECK(cp::checkEmitLimits("plugin", e).has_value());
  e.name = "a\nb";
  CHECK(cp::checkEmitLimits("plugin", e).has_value());
  e.name = "n";
  // A JSON string payload of exactly 262,144 bytes serialized (quotes included), then one more.
  e.payload = cp::JsonValue::fromText("\"" + std::string(262'142, 'x') + "\"");
  CHECK_FALSE(cp::checkEmitLimits("plugin", e).has_value());
  e.payload = cp::JsonValue::fromText("\"" + std::string(262'143, 'x') + "\"");
  CHECK(cp::checkEmitLimits("plugin", e).has_value());
}

TEST_CASE("HOOK-48 persisted assistant part variants", "[protocol][hook]") {
  CHECK_FALSE(cp::checkPersistedPart(doc(R"({"type":"text","text":"a","metadata":null})")).has_value());
  CHECK(cp::checkPersistedPart(doc(R"({"type":"text","text":"a"})")).has_value());
  CHECK(cp::checkPersistedPart(doc(R"({"type":"text","text":"a","metadata":null,"x":1})")).has_value());
  CHECK(cp::checkPersistedPart(doc(R"({"type":"hologram"})")).has_value());
}

TEST_CASE("RPC-12 validate() by method entry agrees with validate() by name, across profiles", "[protocol][profile]") {
  const cp::Profile& v6 = cp::profileV006();
  const cp::Profile& v4 = cp::profileV004();
  const cp::MethodInfo* call6 = v6.findMethod(cp::method::kToolsCall);
  REQUIRE(call6);
  CHECK(v6.findMethod("plugin/no_such_method") == nullptr);
  const json::Document legacy = doc(R"({"content":"x","is_error":false})");
  // Same profile: the entry is used as it is.
  auto by_entry = v6.validate(*call6, cp::Part::Result, legacy, {});
  REQUIRE(by_entry);
  CHECK(by_entry->rule_id == "TOOL-10");
  // Another profile's entry (a request recorded before the handshake showed 0.0.4) is looked up by
  // name in the profile that validates: 0.0.4 accepts the legacy result 0.0.6 refuses.
  CHECK_FALSE(v4.validate(*call6, cp::Part::Result, legacy, {}).has_value());
  // A method only 0.0.6 knows, validated by 0.0.4 through 0.0.6's entry: RPC-13.
  const cp::MethodInfo* send6 = v6.findMethod(cp::method::kProducerSend);
  REQUIRE(send6);
  REQUIRE(v4.findMethod(cp::method::kProducerSend) == nullptr);
  auto unknown = v4.validate(*send6, cp::Part::Params, doc("{}"), {});
  REQUIRE(unknown);
  CHECK(unknown->rule_id == "RPC-13");
}

TEST_CASE("RPC-12 the no-duplicate-names hint never changes a verdict on a value without repeats", "[protocol][profile]") {
  const cp::Profile& v6 = cp::profileV006();
  const cp::MethodInfo* ev = v6.findMethod(cp::method::kEvent);
  REQUIRE(ev);
  const std::string good =
      R"({"session_id":"0191c0de-0000-7000-8000-000000000001","context_id":"c1","seq":1,"event":{"type":"message_appended","role":"assistant","text":"hi"},"timestamp":"2026-01-01T00:00:01Z"})";
  const std::string bad =  // seq below its minimum
      R"({"session_id":"0191c0de-0000-7000-8000-000000000001","context_id":"c1","seq":-1,"event":{"type":"message_appended","role":"assistant","text":"hi"},"timestamp":"2026-01-01T00:00:01Z"})";
  cp::Profile::ValidateHints hint;
  hint.no_duplicate_names = true;
  for (const auto& [text, valid] : {std::pair{good, true}, std::pair{bad, false}}) {
    const json::Document d = doc(text);
    const bool plain = !v6.validate(*ev, cp::Part::Params, d, {}).has_value();
    const bool hinted = !v6.validate(*ev, cp::Part::Params, d, hint).has_value();
    CHECK(plain == valid);
    CHECK(hinted == valid);
  }
}

TEST_CASE("RPC-12 uuid format: every position is checked", "[protocol][validate]") {
  const std::string good = "0191c0de-ABCD-7000-8000-00000000beef";
  CHECK(cp::isUuid(good));
  for (std::size_t i = 0; i < good.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    for (char bad : dash ? std::string("0a_") : std::string("g-G \x80\xff")) {
      std::string s = good;
      s[i] = bad;
      INFO("position " << i << " holds byte " << static_cast<int>(static_cast<unsigned char>(bad)));
      CHECK_FALSE(cp::isUuid(s));
    }
  }
  CHECK_FALSE(cp::isUuid(good + "0"));
  CHECK_FALSE(cp::isUuid(good.substr(1)));
}
