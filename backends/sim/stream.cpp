// stream.cpp — streams of the simulated accelerator: one worker thread per stream runs the
// queued tasks in order, each after NNPLUG_SIM_DELAY_US, so the host always runs ahead of the
// "device" as it does with a GPU. The first failure of queued work is kept and returned by the
// next synchronize; the tasks queued after it are skipped (their outputs stay untouched), as
// work behind a failed kernel never runs on a GPU stream.
#include "sim.hpp"

#include <chrono>

namespace nnp::sim {

stream::stream(int32_t device)
    : device_(device),
      delay_us_(env_int("NNPLUG_SIM_DELAY_US", 50, 0, 10'000'000)),
      fail_after_(env_int("NNPLUG_SIM_FAIL_AFTER", 0, 0, INT64_MAX)) {
  worker_ = std::thread([this] { run(); });
}

stream::~stream() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    wait_idle(lock);
    stopping_ = true;
  }
  work_cv_.notify_one();
  worker_.join();
}

void stream::enqueue(std::function<void()> task, std::function<void()> done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(item{std::move(task), std::move(done)});
  }
  work_cv_.notify_one();
}

bool stream::next_op_fails() {
  std::lock_guard<std::mutex> lock(mutex_);
  return ++ops_queued_ == fail_after_;
}

void stream::wait_idle(std::unique_lock<std::mutex>& lock) {
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void stream::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  wait_idle(lock);
  if (error_ == NNP_STATUS_OK) return;
  const nnp_status status = error_;
  const std::string message = message_;
  error_ = NNP_STATUS_OK;
  message_.clear();
  fail(status, format("sim:%d: queued work failed: %s", device_, message.c_str()));
}

void stream::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    item it = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    const bool skip = error_ != NNP_STATUS_OK;
    lock.unlock();

    if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
    nnp_status status = NNP_STATUS_OK;
    std::string message;
    if (!skip) {
      try {
        it.task();
      } catch (const error& e) {
        status = e.status();
        message = e.what();
      } catch (const std::bad_alloc&) {
        status = NNP_STATUS_OUT_OF_MEMORY;
        message = "out of host memory";
      } catch (const std::exception& e) {
        status = NNP_STATUS_INTERNAL;
        message = e.what();
      }
    }
    if (it.done) it.done();

    lock.lock();
    if (status != NNP_STATUS_OK && error_ == NNP_STATUS_OK) {
      error_ = status;
      message_ = std::move(message);
    }
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace nnp::sim
