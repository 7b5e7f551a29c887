// The enum name tables of enum_names.hpp: every value prints and parses back, a value outside the
// table prints as the fallback, names are matched exactly, the table may start above zero (the
// protocol's message types start at 1), and list() spells what is accepted.
#include "sparserl/datasets/enum_names.hpp"

#include <cstdint>

#include "catch.hpp"

namespace ds = sparserl::datasets;

namespace {

enum class Colour { red, green, blue };
enum class Message : std::uint8_t { hello = 1, reply = 2, bye = 3 };

constexpr auto kColours = ds::enum_names<Colour::red, Colour::blue>({"red", "green", "blue"});
constexpr auto kMessages = ds::enum_names<Message::hello, Message::bye>({"Hello", "Reply", "Bye"});

}  // namespace

TEST_CASE("enum names print and parse back, in order", "[datasets][enum_names]") {
  static_assert(kColours.name(Colour::green) == "green");
  for (Colour c : {Colour::red, Colour::green, Colour::blue}) {
    CHECK(kColours.parse(kColours.name(c)) == c);
  }
  CHECK(kMessages.name(Message::hello) == "Hello");
  CHECK(kMessages.name(Message::bye) == "Bye");
  CHECK(kMessages.parse("Reply") == Message::reply);
}

TEST_CASE("enum names: unknown values and texts", "[datasets][enum_names]") {
  CHECK(kColours.name(static_cast<Colour>(7)) == "?");
  CHECK(kColours.name(static_cast<Colour>(-1), "unknown") == "unknown");
  CHECK(kMessages.name(static_cast<Message>(0)) == "?");
  CHECK(kMessages.name(static_cast<Message>(4)) == "?");
  CHECK(kColours.parse("Red") == std::nullopt);
  CHECK(kColours.parse("") == std::nullopt);
  CHECK(kMessages.parse("hello") == std::nullopt);
}

TEST_CASE("enum names list what is accepted", "[datasets][enum_names]") {
  CHECK(kColours.list() == "red, green or blue");
  CHECK(kColours.list(" and ") == "red, green and blue");
  CHECK(ds::enum_names<Colour::red, Colour::red>({"red"}).list() == "red");
}
