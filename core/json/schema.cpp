// core/json/schema — the compiled validator (see schema.h for the design and why `pattern` and
// `format` never reach valijson's std::regex).
//
// valijson must be built with VALIJSON_USE_EXCEPTIONS=1 everywhere it is included (otherwise a bad
// schema calls abort(), and mixed settings break the one-definition rule for its inline
// throwRuntimeError). Its rapidjson_adapter.hpp wants to redefine RAPIDJSON_ASSERT to throw; we
// keep RapidJSON's ordinary assert in every TU (one definition) and silence its #warning here.
#ifndef VALIJSON_USE_EXCEPTIONS
#define VALIJSON_USE_EXCEPTIONS 1
#endif
#include "core/json/schema.h"

#include <exception>
#include <new>

#include "core/json/schema_rewrite.h"

#pragma clang diagnostic push
#pragma clang diagnostic ignored "-W#warnings"
#include <valijson/adapters/rapidjson_adapter.hpp>
#pragma clang diagnostic pop
#include <valijson/constraint_builder.hpp>
#include <valijson/constraints/concrete_constraints.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

namespace conform::json {

using schema_detail::Regex;

namespace {

// ---------------------------------------------------------------------------------------------
// Custom constraints
// ---------------------------------------------------------------------------------------------

class PatternConstraint final : public valijson::constraints::PolyConstraint {
 public:
  explicit PatternConstraint(std::shared_ptr<const Regex> re) : re_(std::move(re)) {}
  bool validate(const valijson::adapters::Adapter& target, const std::vector<std::string>& context,
                valijson::ValidationResults* results) const override {
    if (!target.isString()) return true;
    std::string s;
    target.getString(s);
    bool err = false;
    if (re_->search(s, &err)) return true;
    if (results)
      results->pushError(context, err ? "x-conform: pattern " + re_->source() + " could not be evaluated (match limit)"
                                      : "x-conform: does not match pattern " + re_->source());
    return false;
  }

 private:
  Constraint* cloneInto(void* mem) const override { return new (mem) PatternConstraint(*this); }
  size_t sizeOf() const override { return sizeof(PatternConstraint); }
  std::shared_ptr<const Regex> re_;
};

enum class Format { None, Uuid, DateTime };

class FormatConstraint final : public valijson::constraints::PolyConstraint {
 public:
  explicit FormatConstraint(Format f) : f_(f) {}
  bool validate(const valijson::adapters::Adapter& target, const std::vector<std::string>& context,
                valijson::ValidationResults* results) const override {
    if (f_ == Format::None || !target.isString()) return true;
    std::string s;
    target.getString(s);
    bool ok = f_ == Format::Uuid ? isUuid(s) : isDateTime(s);
    if (!ok && results)
      results->pushError(context, std::string("x-conform: not a valid ") +
                                      (f_ == Format::Uuid ? "uuid" : "date-time (RFC 3339)"));
    return ok;
  }

 private:
  Constraint* cloneInto(void* mem) const override { return new (mem) FormatConstraint(*this); }
  size_t sizeOf() const override { return sizeof(FormatConstraint); }
  Format f_;
};

class PatternBuilder final : public valijson::ConstraintBuilder {
 public:
  valijson::constraints::Constraint* make(const valijson::adapters::Adapter& node) const override {
    std::string s;
    if (!node.getString(s)) throw std::runtime_error("pattern must be a string");
    auto re = Regex::compile(s);
    if (!re) throw std::runtime_error("pattern " + s + ": " + re.error());
    return new PatternConstraint(std::move(*re));
  }
};

class FormatBuilder final : public valijson::ConstraintBuilder {
 public:
  valijson::constraints::Constraint* make(const valijson::adapters::Adapter& node) const override {
    std::string s;
    if (!node.getString(s)) throw std::runtime_error("format must be a string");
    // Every other format is an annotation only (draft 2020-12 default vocabulary).
    Format f = s == "uuid" ? Format::Uuid : s == "date-time" ? Format::DateTime : Format::None;
    return new FormatConstraint(f);
  }
};

// ---------------------------------------------------------------------------------------------
// Error conversion
// ---------------------------------------------------------------------------------------------

// valijson's context is {"<root>", "[member]", "[0]", ...}: members and indices look alike, so we
// walk the instance alongside to tell them apart and render a Path.
std::string contextPath(const std::vector<std::string>& ctx, const Value& instance) {
  Path::Root root;
  std::vector<std::string> names;
  names.reserve(ctx.size());
  std::vector<Path> paths;
  paths.reserve(ctx.size() + 1);
  paths.emplace_back(root);
  const Value* cur = &instance;
  for (std::size_t i = 1; i < ctx.size(); ++i) {
    const std::string& seg = ctx[i];
    std::string name = seg.size() >= 2 && seg.front() == '[' && seg.back() == ']' ? seg.substr(1, seg.size() - 2) : seg;
    names.push_back(std::move(name));
    const std::string& n = names.back();
    bool is_index = cur && cur->IsArray() && !n.empty() && n.size() < 10 &&
                    n.find_first_not_of("0123456789") == std::string::npos;
    if (is_index) {
      auto idx = static_cast<rapidjson::SizeType>(std::stoul(n));
      cur = idx < cur->Size() ? &(*cur)[idx] : nullptr;
      paths.push_back(paths.back().index(idx));
    } else {
      cur = cur ? member(*cur, n) : nullptr;
      paths.push_back(paths.back().field(n));
    }
  }
  return paths.back().str();
}

std::string between(const std::string& s, const std::string& open, char close) {
  auto b = s.find(open);
  if (b == std::string::npos) return {};
  b += open.size();
  auto e = s.find(close, b);
  return e == std::string::npos ? std::string{} : s.substr(b, e - b);
}

const Value* at(const std::vector<std::string>& ctx, const Value& instance) {
  const Value* cur = &instance;
  for (std::size_t i = 1; i < ctx.size() && cur; ++i) {
    const std::string& seg = ctx[i];
    std::string n = seg.size() >= 2 ? seg.substr(1, seg.size() - 2) : seg;
    if (cur->IsArray() && !n.empty() && n.size() < 10 && n.find_first_not_of("0123456789") == std::string::npos) {
      auto idx = static_cast<rapidjson::SizeType>(std::stoul(n));
      cur = idx < cur->Size() ? &(*cur)[idx] : nullptr;
    } else {
      cur = member(*cur, n);
    }
  }
  return cur;
}

SchemaViolation convert(const valijson::ValidationResults::Error& e, const Value& instance) {
  SchemaViolation v;
  v.path = contextPath(e.context, instance);
  const std::string& d = e.description;
  const Value* here = at(e.context, instance);
  if (d.rfind("x-conform: ", 0) == 0) {
    v.message = d.substr(11);
  } else if (d.find("'type' constraint") != std::string::npos) {
    v.message = std::string("value of type ") + (here ? typeName(*here) : "?") + " not allowed by 'type'";
  } else if (d.rfind("Missing required property", 0) == 0) {
    v.message = "required member \"" + between(d, "'", '\'') + "\" is missing";
  } else if (d.find("could not be validated using 'properties' or 'additionalProperties'") != std::string::npos) {
    std::string name = between(d, ": '", '\'');
    auto ctx = e.context;
    ctx.push_back("[" + name + "]");
    v.path = contextPath(ctx, instance);
    v.message = "unknown member \"" + name + "\" (additionalProperties is false)";
  } else if (d.rfind("Failed to validate against schema associated with property name '", 0) == 0 ||
             d.rfind("Failed to validate item #", 0) == 0) {
    // A summary whose cause left no error of its own (a `false` subschema): point at the member.
    bool item = d[19] == 'i';
    std::string seg = item ? between(d, "#", ' ') : between(d, "name '", '\'');
    auto ctx = e.context;
    ctx.push_back("[" + seg + "]");
    v.path = contextPath(ctx, instance);
    v.message = "value not allowed by the schema";
  } else if (d.find("enum") != std::string::npos) {
    v.message = "value " + (here ? compact(*here) : std::string("?")) + " is not one of the allowed values";
  } else {
    v.message = d;
    if (!v.message.empty() && v.message.back() == '.') v.message.pop_back();
  }
  return v;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------------------

struct Schema::Impl {
  Document source;
  Document rewritten;
  valijson::Schema compiled;
  bool uses_pattern_properties = false;
};

Schema::Schema() = default;

Expected<Schema, std::string> Schema::compile(std::string_view text) {
  auto p = parse(text);
  if (!p) return unexpected("schema is not JSON: " + p.error().message);
  return compile(p->doc);
}

Expected<Schema, std::string> Schema::compile(const Value& schema) {
  if (auto bad = checkSchemaDocument(schema)) return unexpected("invalid schema: " + bad->str());
  auto impl = std::make_shared<Impl>();
  deepCopy(impl->source, schema, impl->source.GetAllocator());
  auto rw = schema_detail::rewriteForValijson(impl->source, impl->rewritten, impl->uses_pattern_properties);
  if (!rw) return unexpected("invalid schema: " + rw.error());
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    parser.addConstraintBuilder("x-conform-pattern", new PatternBuilder());
    parser.addConstraintBuilder("x-conform-format", new FormatBuilder());
    valijson::adapters::RapidJsonAdapter adapter(impl->rewritten);
    parser.populateSchema(adapter, impl->compiled);
  } catch (const std::exception& e) {
    return unexpected(std::string("invalid schema: ") + e.what());
  } catch (...) {
    return unexpected(std::string("invalid schema: unknown error"));
  }
  return Schema(std::shared_ptr<const Impl>(std::move(impl)));
}

const Value& Schema::source() const {
  static const Value kNull;
  return impl_ ? impl_->source : kNull;
}

namespace {

// Longest member name anywhere in the instance exceeds `limit`? (patternProperties guard)
const Value* longMemberName(const Value& v, std::size_t limit, std::vector<std::string>& ctx) {
  if (v.IsObject()) {
    for (auto& m : v.GetObject()) {
      if (m.name.GetStringLength() > limit) return &m.name;
      ctx.push_back("[" + std::string(m.name.GetString(), m.name.GetStringLength()) + "]");
      if (const Value* r = longMemberName(m.value, limit, ctx)) return r;
      ctx.pop_back();
    }
  } else if (v.IsArray()) {
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      ctx.push_back("[" + std::to_string(i) + "]");
      if (const Value* r = longMemberName(v[i], limit, ctx)) return r;
      ctx.pop_back();
    }
  }
  return nullptr;
}

}  // namespace

std::vector<SchemaViolation> Schema::validateAll(const Value& instance, std::size_t max) const {
  std::vector<SchemaViolation> out;
  if (!impl_ || max == 0) return out;
  if (impl_->uses_pattern_properties) {
    std::vector<std::string> ctx{"<root>"};
    if (longMemberName(instance, kMaxPatternSubjectBytes, ctx)) {
      out.push_back({contextPath(ctx, instance), "member name longer than " + std::to_string(kMaxPatternSubjectBytes) +
                                                    " bytes (patternProperties not evaluated)"});
      return out;
    }
  }
  try {
    valijson::adapters::RapidJsonAdapter target(instance);
    {
      // Fast path: no error collection, stops at the first failure.
      valijson::Validator quick;
      if (quick.validate(impl_->compiled, target, nullptr)) return out;
    }
    valijson::Validator v;
    valijson::ValidationResults results;
    v.validate(impl_->compiled, target, &results);
    valijson::ValidationResults::Error e;
    while (out.size() < max && results.popError(e)) out.push_back(convert(e, instance));
    if (out.empty()) out.push_back({"<root>", "does not match the schema"});
  } catch (const std::exception& ex) {
    out.push_back({"<root>", std::string("schema validation failed: ") + ex.what()});
  } catch (...) {
    out.push_back({"<root>", "schema validation failed"});
  }
  return out;
}

std::optional<SchemaViolation> Schema::validate(const Value& instance) const {
  auto all = validateAll(instance, 64);
  if (all.empty()) return std::nullopt;
  // valijson reports the innermost cause first, then each enclosing "failed to validate
  // against ..." summary; the first entry is the most specific.
  return all.front();
}

}  // namespace conform::json
