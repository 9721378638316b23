// The generated rule catalogue must equal spec/RULES.md whenever that file is beside the checkout
// (CI may build without ../shared; then only the structural checks run).
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "reports/rule_catalog.h"

using namespace conform::reports;

namespace {
std::string trim(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}
}  // namespace

TEST_CASE("catalogue: 348 unique rules with known levels and binds", "[catalog]") {
  auto rules = ruleCatalog();
  CHECK(rules.size() == 348);
  std::set<std::string_view> ids;
  for (const RuleInfo& r : rules) {
    CHECK(ids.insert(r.id).second);
    CHECK(r.binds != 0);
    CHECK(!r.text.empty());
    CHECK(findRule(r.id) == &r);
  }
  CHECK(findRule("FRAME-06")->level == RuleLevel::M);
  CHECK(findRule("FRAME-06")->binds == kBindsEngine);
  CHECK(findRule("RPC-18")->level == RuleLevel::C);
  CHECK(findRule("FRAME-19")->level == RuleLevel::I);
  CHECK(findRule("NOPE-01") == nullptr);
  CHECK(areaOf("QUOTA-05") == "QUOTA");
  CHECK(std::string(bindsText(kBindsEngine | kBindsPlugin)) == "E,P");
}

namespace {
// Compares one spec file's rule table with the generated family. Letters of the Binds column map
// as in scripts/gen_rules.py. REWORDED rules (cognipeer) keep their other columns.
void checkFamily(const std::string& file, RuleFamily family) {
  std::ifstream in(std::string(CONFORM_SHARED_DIR) + "/spec/" + file);
  if (!in) {
    WARN(file << " not found beside the checkout; up-to-date check skipped");
    return;
  }
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) != 0 || line.size() < 12) continue;
    std::vector<std::string> cells;
    std::string body = line.substr(1, line.size() - (line.back() == '|' ? 2 : 1));
    std::size_t pos = 0;
    while (true) {
      std::size_t bar = body.find(" | ", pos);
      cells.push_back(trim(body.substr(pos, bar == std::string::npos ? std::string::npos : bar - pos)));
      if (bar == std::string::npos) break;
      pos = bar + 3;
    }
    const std::string& id = cells[0];
    auto dash = id.find('-');
    if (dash == std::string::npos || id.size() != dash + 3 || !isdigit((unsigned char)id[dash + 1]))
      continue;
    if (id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789") != std::string::npos) continue;
    REQUIRE(cells.size() == 6);
    ++n;
    INFO(file << " " << id << " — regenerate with: python3 scripts/gen_rules.py");
    const RuleInfo* r = findRule(id);
    REQUIRE(r != nullptr);
    CHECK(toString(r->level) == cells[1]);
    if (family != RuleFamily::Cognipeer) CHECK(r->text == cells[2]);
    std::string binds = cells[3];
    binds.erase(std::remove(binds.begin(), binds.end(), ' '), binds.end());
    std::uint8_t bits = 0;  // order-free: RULES.md writes both "E,P" and "P,E"
    for (char ch : binds)
      bits |= (ch == 'E' || ch == 'H' || ch == 'R') ? kBindsEngine
              : (ch == 'P' || ch == 'G')            ? kBindsPlugin
              : ch == 'S'                           ? kBindsSdk
              : ch == 'C'                           ? kBindsConfig
                                                    : 0;
    CHECK(r->binds == bits);
    CHECK(r->source == cells[4]);
    CHECK(r->observe == cells[5]);
  }
  CHECK(n == ruleCatalog(family).size());
}
}  // namespace

TEST_CASE("catalogue: reports/rule_catalog.cpp is up to date with RULES.md", "[catalog]") {
  checkFamily("RULES.md", RuleFamily::Cookie);
}

TEST_CASE("catalogue: the nanopi and cognipeer families are up to date with NANOPI.md and COGNIPEER.md", "[catalog]") {
  checkFamily("NANOPI.md", RuleFamily::Nanopi);
  checkFamily("COGNIPEER.md", RuleFamily::Cognipeer);
  CHECK(ruleCatalog(RuleFamily::Nanopi).size() == 40);
  CHECK(ruleCatalog(RuleFamily::Cognipeer).size() == 19);
  CHECK(familyOfProfile("nanopi-0.12") == RuleFamily::Nanopi);
  CHECK(familyOfProfile("cognipeer-0.10") == RuleFamily::Cognipeer);
  CHECK(familyOfProfile("0.0.4") == RuleFamily::Cookie);
  CHECK(std::string(bindsText(kBindsEngine | kBindsConfig)) == "E,C");
  // One id space: findRule() reaches every family.
  CHECK(findRule("NP-37") != nullptr);
  CHECK(findRule("CG-05") != nullptr);
}
