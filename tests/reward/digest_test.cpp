// SHA-256 against the FIPS 180-4 / NIST example vectors, and the field framing the cache keys use.
#include "sparserl/reward/digest.hpp"

#include <string>

#include "catch.hpp"

using sparserl::reward::Sha256;
using sparserl::reward::sha256_hex;

TEST_CASE("sha256 matches the NIST example vectors", "[reward][digest]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256 gives the same digest however the input is split", "[reward][digest]") {
  std::string text;
  for (int i = 0; i < 300; ++i) text += static_cast<char>('a' + i % 26);
  const std::string whole = sha256_hex(text);
  for (std::size_t cut : {0, 1, 55, 56, 63, 64, 65, 128, 299}) {
    Sha256 h;
    h.update(text.substr(0, cut)).update(text.substr(cut));
    CHECK(h.finish_hex() == whole);
  }
}

TEST_CASE("sha256 fields cannot run into each other", "[reward][digest]") {
  const std::string ab_c = Sha256().update_field("ab").update_field("c").finish_hex();
  const std::string a_bc = Sha256().update_field("a").update_field("bc").finish_hex();
  CHECK(ab_c != a_bc);
  CHECK(ab_c == Sha256().update_field("ab").update_field("c").finish_hex());
}
