// The one place where an evaluation's exception becomes a result: the training loop sees values
// only.
#include "sparserl/env/evaluation.hpp"

#include <exception>

namespace sparserl::env {

reward::EvalResult take_result(std::future<reward::EvalResult>& future) {
  try {
    return future.get();
  } catch (const std::exception& e) {
    reward::EvalResult r;
    r.error = reward::ErrorKind::internal_error;
    r.message = std::string("the evaluation backend failed: ") + e.what();
    return r;
  } catch (...) {
    reward::EvalResult r;
    r.error = reward::ErrorKind::internal_error;
    r.message = "the evaluation backend failed with an unknown exception";
    return r;
  }
}

}  // namespace sparserl::env
