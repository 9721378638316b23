// core/protocol/validate.h — small text predicates that several implementations share (engine, SDK,
// monitors, decoders). Each one states the definition it implements; none allocates.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace conform::protocol {

// §0.3 snake_case (tool and permission names, INIT-20/21): `^[a-z][a-z0-9]*(_[a-z0-9]+)*$`.
bool isSnakeCase(std::string_view s);

// §0.3 control-free: no code point of general category Cc (U+0000–U+001F, U+007F–U+009F).
// Invalid UTF-8 counts as not control-free (callers get text from a UTF-8 checked parser anyway).
bool isControlFree(std::string_view utf8);

// §0.3 nonblank: non-empty and at least one non-whitespace character (Unicode White_Space).
bool isNonblank(std::string_view utf8);

// §8.1 / C4 stream name: 1–64 characters from the RFC 3986 unreserved set `A–Z a–z 0–9 - . _ ~`
// (TOOL-04).
bool isUriSafeStreamName(std::string_view s);

// Number of Unicode scalar values ("characters", §0.3); nullopt when `s` is not valid UTF-8.
std::optional<std::size_t> utf8Length(std::string_view s);

// §5.1 UUID: 8-4-4-4-12 hex digits (either case; R4 emits lowercase).
bool isUuid(std::string_view s);

// §5.1 Timestamp: RFC 3339 `date-time` (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`, `T`/`Z` in either case).
bool isDateTime(std::string_view s);

}  // namespace conform::protocol
