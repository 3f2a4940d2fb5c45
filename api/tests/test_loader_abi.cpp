// test_loader_abi.cpp — loader and ABI behaviour of libnnplug, checked with the fixture plugins
// of api/tests/fixtures (each breaks one rule of nnplug_plugin.h): exact load state, status
// and reason of every fixture; version negotiation (wrong major, older/newer minor, small
// table); NULL slots; throwing entries; missing dependencies; duplicates; zero devices;
// device lookup messages; foreign pointers; concurrent default loading from 8 threads.
// The fixtures are loaded by explicit path from NNPLUG_FIXTURE_DIR; without it the cases are
// skipped with a message. No case calls nnp_shutdown(): other suites share this process.
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include "op_table_cases.hpp"
#include "test_support.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

bool has_text(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// nnp_last_error_message() contains every one of `parts` (the message is shown on failure).
void check_last_message_has(std::initializer_list<const char*> parts) {
  const std::string message = nnp_last_error_message();
  CAPTURE(message);
  for (const char* part : parts) CHECK(has_text(message, part));
}

// The fixture folder, or "" (and a MESSAGE) when the fixtures are not available.
std::string fixture_dir() {
#ifdef NNPLUG_FIXTURE_DIR
  const std::string dir = NNPLUG_FIXTURE_DIR;
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "libnnplug-fx_ok.so", ec)) return dir;
  MESSAGE("fixture plugins not found in " << dir << "; loader fixture cases skipped");
  return "";
#else
  MESSAGE("NNPLUG_FIXTURE_DIR not defined; loader fixture cases skipped");
  return "";
#endif
}

std::string fixture_path(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / ("libnnplug-fx_" + name + ".so")).string();
}

// A copy of a load record whose strings outlive later calls (until nnp_shutdown anyway).
struct record {
  bool found = false;
  std::string path, name, plugin_version, reason;
  int32_t abi_major = -1, abi_minor = -1, state = 0, status = -1, n_devices = -1;
};

std::vector<nnp_load_record> all_records() {
  size_t n = 0;
  REQUIRE(nnp_get_load_records(nullptr, &n) == NNP_STATUS_OK);
  std::vector<nnp_load_record> recs(n);
  for (auto& r : recs) r.struct_size = sizeof(nnp_load_record);
  size_t n2 = n;
  REQUIRE(nnp_get_load_records(recs.data(), &n2) == NNP_STATUS_OK);
  REQUIRE(n2 >= n);
  return recs;
}

// The latest record of `path`.
record last_record_of(const std::string& path) {
  record out;
  for (const nnp_load_record& r : all_records()) {
    if (path != r.path) continue;
    out.found = true;
    out.path = r.path;
    out.name = r.name;
    out.plugin_version = r.plugin_version;
    out.reason = r.reason;
    out.abi_major = r.abi_version_major;
    out.abi_minor = r.abi_version_minor;
    out.state = r.state;
    out.status = r.status;
    out.n_devices = r.n_devices;
  }
  return out;
}

// A 1-D float32 host tensor of shape[0] elements at `data`.
DLTensor host_f32_vector(float* data, int64_t* shape) {
  return nnp_test::host_tensor(data, DLDataType{kDLFloat, 32, 1}, 1, shape);
}

nnp_fill_params fill_params(double value) {
  nnp_fill_params p{};
  p.struct_size = sizeof(p);
  p.value = value;
  return p;
}

struct expectation {
  const char* fixture;
  nnp_load_state state;
  nnp_status status;
  std::vector<const char*> reason_words;
};

}  // namespace

TEST_CASE("loader: every fixture gets the exact load state, status and reason") {
  const std::string dir = fixture_dir();
  if (dir.empty()) return;
  const std::vector<expectation> cases = {
      {"ok", NNP_LOAD_LOADED, NNP_STATUS_OK, {}},
      {"zero_devices", NNP_LOAD_LOADED, NNP_STATUS_OK, {"0 devices: fixture has no hardware"}},
      {"no_entry", NNP_LOAD_FAILED, NNP_STATUS_LOAD_FAILED, {"nnp_plugin_get_api"}},
      {"wrong_major", NNP_LOAD_REJECTED, NNP_STATUS_ABI_MISMATCH, {"ABI 2.0", "ABI 1."}},
      {"newer_minor", NNP_LOAD_LOADED, NNP_STATUS_OK, {}},
      {"older_minor", NNP_LOAD_LOADED, NNP_STATUS_OK, {}},
      {"minor8", NNP_LOAD_LOADED, NNP_STATUS_OK, {}},
      {"minor9", NNP_LOAD_LOADED, NNP_STATUS_OK, {}},
      {"small_table", NNP_LOAD_REJECTED, NNP_STATUS_ABI_MISMATCH, {"struct_size", "1.0"}},
      {"null_slot", NNP_LOAD_REJECTED, NNP_STATUS_ABI_MISMATCH, {"'op_execute'", "NULL"}},
      {"name_mismatch",
       NNP_LOAD_REJECTED,
       NNP_STATUS_ABI_MISMATCH,
       {"someone_else", "fx_name_mismatch"}},
      {"null_name", NNP_LOAD_REJECTED, NNP_STATUS_ABI_MISMATCH, {"'name'", "NULL"}},
      {"throws", NNP_LOAD_REJECTED, NNP_STATUS_INTERNAL, {"threw", "fixture entry throws"}},
      {"entry_error",
       NNP_LOAD_REJECTED,
       NNP_STATUS_UNAVAILABLE,
       {"fixture refuses to serve this host"}},
      {"init_fails",
       NNP_LOAD_REJECTED,
       NNP_STATUS_DEVICE_ERROR,
       {"initialize", "fixture initialize refuses to start"}},
      {"missing_dep",
       NNP_LOAD_FAILED,
       NNP_STATUS_LOAD_FAILED,
       {"libnnplug_fixture_dep.so", "cannot open shared object file"}},
      {"count_throws",
       NNP_LOAD_REJECTED,
       NNP_STATUS_INTERNAL,
       {"get_device_count threw an exception: std::bad_alloc"}},
      {"init_throws",
       NNP_LOAD_REJECTED,
       NNP_STATUS_INTERNAL,
       {"initialize threw an exception: fixture initialize throws"}},
  };
  for (const expectation& e : cases) {
    CAPTURE(e.fixture);
    const std::string path = fixture_path(dir, e.fixture);
    nnp_plugin* plugin = nullptr;
    const nnp_status st = nnp_load_plugin(path.c_str(), &plugin);
    const std::string message = nnp_last_error_message();
    CHECK(st == e.status);
    const record r = last_record_of(path);
    REQUIRE(r.found);
    CAPTURE(r.reason);
    CHECK(r.state == e.state);
    CHECK(r.status == e.status);
    CHECK(r.name == std::string("fx_") + e.fixture);
    for (const char* word : e.reason_words) {
      CHECK(has_text(r.reason, word));
      if (st != NNP_STATUS_OK) CHECK(has_text(message, word));  // the caller's message too
    }
    if (e.state == NNP_LOAD_LOADED) {
      REQUIRE(plugin != nullptr);
      CHECK(std::string(nnp_plugin_name(plugin)) == std::string("fx_") + e.fixture);
      CHECK(r.plugin_version == "0.0.1-fixture");
      CHECK(r.abi_major == NNP_ABI_VERSION_MAJOR);
    } else {
      CHECK(r.n_devices == 0);
      CHECK(has_text(message, path));  // nnp_load_plugin's message names the candidate
    }
  }
  CHECK(last_record_of(fixture_path(dir, "ok")).n_devices == 1);
  CHECK(last_record_of(fixture_path(dir, "newer_minor")).abi_minor == NNP_ABI_VERSION_MINOR + 7);
  CHECK(last_record_of(fixture_path(dir, "older_minor")).abi_minor == 0);
  CHECK(last_record_of(fixture_path(dir, "wrong_major")).abi_major == NNP_ABI_VERSION_MAJOR + 1);
}

TEST_CASE("loader: zero devices is UNAVAILABLE with the plugin's reason") {
  const std::string dir = fixture_dir();
  if (dir.empty()) return;
  REQUIRE(nnp_load_plugin(fixture_path(dir, "zero_devices").c_str(), nullptr) == NNP_STATUS_OK);
  nnp_device* dev = nullptr;
  CHECK(nnp_get_device("fx_zero_devices", &dev) == NNP_STATUS_UNAVAILABLE);
  CHECK(dev == nullptr);
  CHECK(has_text(nnp_last_error_message(), "fx_zero_devices: 0 devices: fixture has no hardware"));
  CHECK(nnp_get_device("fx_zero_devices:0", &dev) == NNP_STATUS_UNAVAILABLE);
}

TEST_CASE("loader: explicit loads are idempotent and duplicates are recorded") {
  const std::string dir = fixture_dir();
  if (dir.empty()) return;
  const std::string path = fixture_path(dir, "ok");
  nnp_plugin* first = nullptr;
  nnp_plugin* second = nullptr;
  REQUIRE(nnp_load_plugin(path.c_str(), &first) == NNP_STATUS_OK);
  size_t before = 0;
  REQUIRE(nnp_get_load_records(nullptr, &before) == NNP_STATUS_OK);
  REQUIRE(nnp_load_plugin(path.c_str(), &second) == NNP_STATUS_OK);
  CHECK(first == second);
  size_t after = 0;
  REQUIRE(nnp_get_load_records(nullptr, &after) == NNP_STATUS_OK);
  CHECK(after == before);  // same file: no new record

  // The same plugin name from another file: DUPLICATE, and the loaded one is returned.
  const fs::path tmp = fs::temp_directory_path() /
                       ("nnplug_dup_" + std::to_string(static_cast<long long>(std::rand())));
  fs::create_directories(tmp);
  const fs::path copy = tmp / "libnnplug-fx_ok.so";
  fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
  nnp_plugin* third = nullptr;
  CHECK(nnp_load_plugin(copy.string().c_str(), &third) == NNP_STATUS_OK);
  CHECK(third == first);
  const record dup = last_record_of(copy.string());
  REQUIRE(dup.found);
  CHECK(dup.state == NNP_LOAD_DUPLICATE);
  CHECK(has_text(dup.reason, "already loaded"));
  CHECK(has_text(dup.reason, path));
  std::error_code ec;
  fs::remove_all(tmp, ec);
}

TEST_CASE("loader: bad paths and arguments") {
  CHECK(nnp_load_plugin(nullptr, nullptr) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(nnp_load_plugin("", nullptr) == NNP_STATUS_INVALID_ARGUMENT);
  const std::string missing = "/nonexistent/dir/libnnplug-nothing.so";
  CHECK(nnp_load_plugin(missing.c_str(), nullptr) == NNP_STATUS_NOT_FOUND);
  CHECK(has_text(nnp_last_error_message(), "no such file"));
  const record r = last_record_of(missing);
  REQUIRE(r.found);
  CHECK(r.state == NNP_LOAD_FAILED);
  CHECK(r.status == NNP_STATUS_NOT_FOUND);
  CHECK(nnp_get_load_records(nullptr, nullptr) == NNP_STATUS_INVALID_ARGUMENT);

  const std::string dir = fixture_dir();
  if (dir.empty()) return;
  // A library whose file name is not libnnplug-<name>.so is not a plugin candidate.
  const std::string helper = (fs::path(dir) / "hidden_dep" / "libnnplug_fixture_dep.so").string();
  CHECK(nnp_load_plugin(helper.c_str(), nullptr) == NNP_STATUS_LOAD_FAILED);
  CHECK(has_text(nnp_last_error_message(), "libnnplug-<name>.so"));
}

TEST_CASE("loader: load records two-call listing") {
  REQUIRE(nnp_load_default_plugins() == NNP_STATUS_OK);
  size_t total = 0;
  REQUIRE(nnp_get_load_records(nullptr, &total) == NNP_STATUS_OK);
  if (total == 0) {
    MESSAGE("no load records (no plugin found); listing case skipped");
    return;
  }
  nnp_load_record one[2] = {};
  one[0].struct_size = sizeof(nnp_load_record);
  one[1].path = "sentinel";
  size_t n = 1;
  REQUIRE(nnp_get_load_records(one, &n) == NNP_STATUS_OK);
  CHECK(n == total);  // the total, not the count written
  CHECK(one[0].path != nullptr);
  CHECK(std::string(one[1].path) == "sentinel");  // nothing written past the caller's count
  CHECK(one[0].state >= NNP_LOAD_LOADED);
  CHECK(one[0].state <= NNP_LOAD_DUPLICATE);
  one[0].struct_size = 0;
  n = 1;
  CHECK(nnp_get_load_records(one, &n) == NNP_STATUS_INVALID_ARGUMENT);
}

TEST_CASE("loader: a working fixture device: memory, streams, ops, messages") {
  const std::string dir = fixture_dir();
  if (dir.empty()) return;
  REQUIRE(nnp_load_plugin(fixture_path(dir, "ok").c_str(), nullptr) == NNP_STATUS_OK);
  nnp_device* dev = nullptr;
  REQUIRE(nnp_get_device("fx_ok:0", &dev) == NNP_STATUS_OK);
  nnp_device_props props{};
  props.struct_size = sizeof(props);
  REQUIRE(nnp_device_get_props(dev, &props) == NNP_STATUS_OK);
  CHECK(std::string(props.name) == "fx_ok:0");
  CHECK(props.auto_priority == -100);

  nnp_device* autodev = nullptr;
  if (nnp_get_device("auto", &autodev) == NNP_STATUS_OK) CHECK(autodev != dev);

  float* buf = nullptr;
  REQUIRE(nnp_malloc(dev, 16 * sizeof(float), reinterpret_cast<void**>(&buf)) == NNP_STATUS_OK);
  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  int64_t shape[1] = {16};
  DLTensor y = host_f32_vector(buf, shape);
  const nnp_fill_params fp = fill_params(3.0);
  REQUIRE(nnp_fill(s, &fp, &y) == NNP_STATUS_OK);
  REQUIRE(nnp_stream_synchronize(s) == NNP_STATUS_OK);
  for (int i = 0; i < 16; ++i) CHECK(buf[i] == 3.0f);

  // The plugin's own UNSUPPORTED message, prefixed with its name by the host.
  DLTensor y64 = y;
  y64.dtype = DLDataType{kDLFloat, 64, 1};
  y64.shape = shape;
  const DLTensor* outs[] = {&y64};
  CHECK(nnp_op_supported(dev, NNP_OP_FILL, &fp, 0, nullptr, 1, outs) == NNP_STATUS_UNSUPPORTED);
  CHECK(std::string(nnp_last_error_message()) ==
        "fx_ok: the fixture implements fill on float32 only");
  // Optional slot left NULL: the host answers UNSUPPORTED itself.
  CHECK(nnp_stream_set_attribute(s, NNP_STREAM_ATTR_ALLOW_TF32, 1) == NNP_STATUS_UNSUPPORTED);
  CHECK(nnp_stream_set_attribute(s, 77, 1) == NNP_STATUS_INVALID_ARGUMENT);

  // Copies across plugins (both host-memory devices) and a foreign pointer.
  nnp_device* ref = nullptr;
  if (nnp_get_device("reference", &ref) == NNP_STATUS_OK) {
    float* rbuf = nullptr;
    REQUIRE(nnp_malloc(ref, 16 * sizeof(float), reinterpret_cast<void**>(&rbuf)) == NNP_STATUS_OK);
    REQUIRE(nnp_memcpy(ref, rbuf, dev, buf, 16 * sizeof(float)) == NNP_STATUS_OK);
    for (int i = 0; i < 16; ++i) CHECK(rbuf[i] == 3.0f);
    CHECK(nnp_memcpy_async(s, ref, rbuf, dev, buf, 4) == NNP_STATUS_OK);  // stream of src
    CHECK(nnp_free(ref, buf) == NNP_STATUS_INVALID_ARGUMENT);             // belongs to fx_ok:0
    CHECK(has_text(nnp_last_error_message(), "fx_ok:0"));
    nnp_stream* rs = nullptr;
    REQUIRE(nnp_stream_create(ref, &rs) == NNP_STATUS_OK);
    float host[4] = {0, 0, 0, 0};
    CHECK(nnp_memcpy_async(rs, nullptr, host, dev, buf, sizeof(host)) ==
          NNP_STATUS_INVALID_ARGUMENT);  // stream of neither device
    CHECK(nnp_stream_destroy(rs) == NNP_STATUS_OK);
    CHECK(nnp_free(ref, rbuf) == NNP_STATUS_OK);
  }
  int not_ours = 0;
  CHECK(nnp_free(dev, &not_ours) == NNP_STATUS_INVALID_ARGUMENT);
  CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
  CHECK(nnp_free(dev, buf) == NNP_STATUS_OK);
}

TEST_CASE("loader: a plugin of an older minor never receives newer kinds, fields or tensors") {
  const std::string dir = fixture_dir();
  if (dir.empty()) return;
  nnp_plugin* plugin = nullptr;
  REQUIRE(nnp_load_plugin(fixture_path(dir, "older_minor").c_str(), &plugin) == NNP_STATUS_OK);
  nnp_device* dev = nullptr;
  REQUIRE(nnp_get_device("fx_older_minor", &dev) == NNP_STATUS_OK);
  nnp_stream* stream = nullptr;
  REQUIRE(nnp_stream_create(dev, &stream) == NNP_STATUS_OK);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0, 0, 0, 0, 0, 0};
  int64_t xs[2] = {2, 3};
  DLTensor tx{x, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, xs, nullptr, 0};
  DLTensor ty{y, {kDLCPU, 0}, 0, {kDLFloat, 32, 1}, nullptr, nullptr, 0};
  const DLTensor* in[] = {&tx};
  const DLTensor* out[] = {&ty};
  nnp_reduce_params p{};
  p.struct_size = sizeof p;
  p.op = NNP_REDUCE_SUM;
  p.keepdims = 0;
  // The 1.1 field at its default: the 1.0 plugin runs the call (sum of everything).
  CHECK(nnp_op_supported(dev, NNP_OP_REDUCE, &p, 1, in, 1, out) == NNP_STATUS_OK);
  REQUIRE(nnp_op_execute(stream, NNP_OP_REDUCE, &p, 1, in, 1, out) == NNP_STATUS_OK);
  CHECK(y[0] == 21.0f);
  // Set to a non-default value, the field would be ignored by the plugin: the host refuses.
  p.noop_with_empty_axes = 1;
  ty.ndim = 2;
  ty.shape = xs;
  y[0] = -1.0f;
  CHECK(nnp_op_supported(dev, NNP_OP_REDUCE, &p, 1, in, 1, out) == NNP_STATUS_UNSUPPORTED);
  check_last_message_has({"noop_with_empty_axes", "ABI 1.1", "fx_older_minor"});
  CHECK(nnp_op_execute(stream, NNP_OP_REDUCE, &p, 1, in, 1, out) == NNP_STATUS_UNSUPPORTED);
  CHECK(y[0] == -1.0f);  // untouched
  // A caller compiled against 1.0 (struct_size without the field) is served as before.
  p.struct_size = NNP_REDUCE_PARAMS_STRUCT_SIZE_1_0;
  ty.ndim = 0;
  CHECK(nnp_op_execute(stream, NNP_OP_REDUCE, &p, 1, in, 1, out) == NNP_STATUS_OK);
  CHECK(y[0] == 21.0f);
  // An enum value newer than the plugin (NNP_REDUCE_MIN, ABI 1.2) in a field it knows: the
  // plugin could not tell it from garbage, so the host refuses it.
  p.struct_size = sizeof p;
  p.noop_with_empty_axes = 0;
  p.op = NNP_REDUCE_MIN;
  y[0] = -1.0f;
  CHECK(nnp_op_execute(stream, NNP_OP_REDUCE, &p, 1, in, 1, out) == NNP_STATUS_UNSUPPORTED);
  check_last_message_has({"params->op", "new in ABI 1.2", "fx_older_minor"});
  CHECK(y[0] == -1.0f);  // untouched
  // Tensors an op gained after the plugin's minor (ABI 1.4: adam_update's step and lr,
  // dropout's step) and the 1.4 params field offset_per_step: passed (or set), the host refuses
  // the call, naming them; left out (NULL within the counts) or at the default, the plugin is
  // asked, and answers for itself (it implements neither op).
  {
    float g[6] = {1, 1, 1, 1, 1, 1}, w[6] = {2, 2, 2, 2, 2, 2}, m[6] = {}, v[6] = {};
    float step = 1, lr = 0.01f;
    int64_t six[1] = {6};
    const DLDataType f32{kDLFloat, 32, 1};
    DLTensor tg{g, {kDLCPU, 0}, 1, f32, six, nullptr, 0}, tw = tg, tm = tg, tv = tg;
    tw.data = w;
    tm.data = m;
    tv.data = v;
    DLTensor ts{&step, {kDLCPU, 0}, 0, f32, nullptr, nullptr, 0}, tl = ts;
    tl.data = &lr;
    nnp_adam_params ap{};
    ap.struct_size = sizeof ap;
    ap.lr = 1e-3;
    ap.beta1 = 0.9;
    ap.beta2 = 0.999;
    ap.step = 1;
    const DLTensor* adam_out[] = {&tw, &tm, &tv};
    const DLTensor* with_step[] = {&tg, &ts, nullptr};
    CHECK(nnp_op_supported(dev, NNP_OP_ADAM_UPDATE, &ap, 3, with_step, 3, adam_out) ==
          NNP_STATUS_UNSUPPORTED);
    CHECK(std::string(nnp_last_error_message()) ==
          "adam_update: input 'step' is new in ABI 1.4; plugin 'fx_older_minor' is built for "
          "ABI 1.0");
    CHECK(nnp_op_execute(stream, NNP_OP_ADAM_UPDATE, &ap, 3, with_step, 3, adam_out) ==
          NNP_STATUS_UNSUPPORTED);
    CHECK(has_text(nnp_last_error_message(), "input 'step' is new in ABI 1.4"));
    const DLTensor* with_lr[] = {&tg, nullptr, &tl};
    CHECK(nnp_op_execute(stream, NNP_OP_ADAM_UPDATE, &ap, 3, with_lr, 3, adam_out) ==
          NNP_STATUS_UNSUPPORTED);
    CHECK(has_text(nnp_last_error_message(), "input 'lr' is new in ABI 1.4"));
    CHECK(w[0] == 2.0f);  // untouched
    const DLTensor* without[] = {&tg, nullptr, nullptr};
    CHECK(nnp_op_supported(dev, NNP_OP_ADAM_UPDATE, &ap, 3, without, 3, adam_out) ==
          NNP_STATUS_UNSUPPORTED);
    const std::string plugin_says = nnp_last_error_message();
    CHECK(has_text(plugin_says, "fx_older_minor"));
    CHECK_FALSE(has_text(plugin_says, "new in ABI"));  // the plugin's own answer

    nnp_dropout_params dp{};
    dp.struct_size = sizeof dp;
    dp.ratio = 0.5;
    DLTensor ty = tw;
    const DLTensor* drop_in[] = {&tg, &ts};
    const DLTensor* drop_out[] = {&ty};
    CHECK(nnp_op_supported(dev, NNP_OP_DROPOUT_BACKWARD, &dp, 2, drop_in, 1, drop_out) ==
          NNP_STATUS_UNSUPPORTED);
    CHECK(std::string(nnp_last_error_message()) ==
          "dropout_backward: input 'step' is new in ABI 1.4; plugin 'fx_older_minor' is built "
          "for ABI 1.0");
    dp.offset_per_step = 4;
    CHECK(nnp_op_supported(dev, NNP_OP_DROPOUT_BACKWARD, &dp, 1, drop_in, 1, drop_out) ==
          NNP_STATUS_UNSUPPORTED);
    check_last_message_has({"params->offset_per_step (new in ABI 1.4) is 4", "fx_older_minor"});
    dp.struct_size = NNP_DROPOUT_PARAMS_STRUCT_SIZE_1_0;  // a 1.0 caller: the field is not there
    CHECK(nnp_op_supported(dev, NNP_OP_DROPOUT_BACKWARD, &dp, 1, drop_in, 1, drop_out) ==
          NNP_STATUS_UNSUPPORTED);
    CHECK_FALSE(has_text(nnp_last_error_message(), "new in ABI"));
  }
  // Kinds newer than the plugin are UNSUPPORTED by the host, whatever the plugin would say.
  for (const conf::table_example& e : conf::table_examples()) {
    if (e.since == 0) continue;
    CAPTURE(e.name);
    const conf::bound_example b = conf::bind_example(
        e, DLDevice{kDLCPU, 0}, DLDataType{kDLFloat, 32, 1}, [](size_t) { return nullptr; });
    CHECK(nnp_op_supported(dev, e.kind, b.params, b.in_ptrs.size(), b.in_ptrs.data(),
                           b.out_ptrs.size(), b.out_ptrs.data()) == NNP_STATUS_UNSUPPORTED);
    CHECK(has_text(nnp_last_error_message(), "new in ABI 1."));
  }
  CHECK(nnp_stream_destroy(stream) == NNP_STATUS_OK);
}

// Every tensor under the accumulation rule (the table's 'a', with its dtype_since) of every op:
// a plugin built for an earlier minor than the tensor's rule never receives it as float32 in a
// 16-bit call; one built for that minor or later does (it then answers for itself).
TEST_CASE("loader: a plugin never receives a float32 statistic in a 16-bit call before its rule") {
  const std::string dir = fixture_dir();
  if (dir.empty()) return;
  int checked = 0;
  for (const int minor : {8, 9}) {
    const std::string name = "minor" + std::to_string(minor);
    REQUIRE(nnp_load_plugin(fixture_path(dir, name).c_str(), nullptr) == NNP_STATUS_OK);
    nnp_device* dev = nullptr;
    REQUIRE(nnp_get_device(("fx_" + name).c_str(), &dev) == NNP_STATUS_OK);
    for (const conf::table_example& e : conf::table_examples()) {
      int32_t since = 0;  // the newest rule among the call's tensors
      for (const auto* ts : {&e.in, &e.out})
        for (const conf::table_tensor& t : *ts)
          if (t.dtype == 'a') since = std::max(since, t.dtype_since);
      if (since == 0) continue;
      CAPTURE(e.name);
      CAPTURE(minor);
      for (const DLDataType half : {DLDataType{kDLFloat, 16, 1}, DLDataType{kDLBfloat, 16, 1}}) {
        const conf::bound_example b =
            conf::bind_example(e, DLDevice{kDLCPU, 0}, half, [](size_t) { return nullptr; });
        CHECK(nnp_op_supported(dev, e.kind, b.params, b.in_ptrs.size(), b.in_ptrs.data(),
                               b.out_ptrs.size(), b.out_ptrs.data()) == NNP_STATUS_UNSUPPORTED);
        const std::string rule = "ABI 1." + std::to_string(since);
        if (minor < since) {
          // The host refuses, naming the tensor's rule and the plugin's minor.
          check_last_message_has({"float32", rule.c_str(), ("fx_" + name).c_str(),
                                  ("ABI 1." + std::to_string(minor)).c_str()});
        } else {
          // A call the plugin knows: it answers for itself (it implements fill only).
          CHECK(has_text(nnp_last_error_message(), ("fx_" + name).c_str()));
          CHECK_FALSE(has_text(nnp_last_error_message(), "float32 in a"));
        }
        ++checked;
      }
      // A float32 call is one the plugin knows, whatever its minor.
      const conf::bound_example b = conf::bind_example(
          e, DLDevice{kDLCPU, 0}, DLDataType{kDLFloat, 32, 1}, [](size_t) { return nullptr; });
      CHECK(nnp_op_supported(dev, e.kind, b.params, b.in_ptrs.size(), b.in_ptrs.data(),
                             b.out_ptrs.size(), b.out_ptrs.data()) == NNP_STATUS_UNSUPPORTED);
      CHECK_FALSE(has_text(nnp_last_error_message(), "float32 in a"));
    }
  }
  // attention forward and backward (1.9); layer norm forward and backward and batch norm's
  // three kinds (1.10); two 16-bit dtypes, two fixtures
  CHECK(checked == 28);
}

TEST_CASE("loader: a slot that fails silently or throws becomes a clear status") {
  const std::string dir = fixture_dir();
  if (dir.empty()) return;
  REQUIRE(nnp_load_plugin(fixture_path(dir, "bad_slots").c_str(), nullptr) == NNP_STATUS_OK);
  nnp_device* dev = nullptr;
  REQUIRE(nnp_get_device("fx_bad_slots", &dev) == NNP_STATUS_OK);
  float data[4] = {0, 0, 0, 0};
  int64_t shape[1] = {4};
  DLTensor y = host_f32_vector(data, shape);
  const nnp_fill_params fp = fill_params(1.0);
  const DLTensor* outs[] = {&y};
  // Failure without set_error: the host names the plugin, the slot and the status.
  CHECK(nnp_op_supported(dev, NNP_OP_FILL, &fp, 0, nullptr, 1, outs) == NNP_STATUS_DEVICE_ERROR);
  CHECK(std::string(nnp_last_error_message()) ==
        "fx_bad_slots: op_supported failed (device error)");
  // An exception out of a slot is caught: INTERNAL, and the process goes on.
  nnp_stream* s = nullptr;
  REQUIRE(nnp_stream_create(dev, &s) == NNP_STATUS_OK);
  CHECK(nnp_fill(s, &fp, &y) == NNP_STATUS_INTERNAL);
  CHECK(std::string(nnp_last_error_message()) ==
        "fx_bad_slots: op_execute threw an exception: fixture op_execute throws");
  CHECK(nnp_stream_destroy(s) == NNP_STATUS_OK);
}

TEST_CASE("loader: nnp_get_device of an unknown name lists the available plugins") {
  REQUIRE(nnp_load_default_plugins() == NNP_STATUS_OK);
  nnp_device* dev = nullptr;
  CHECK(nnp_get_device("nonexistent", &dev) == NNP_STATUS_NOT_FOUND);
  CHECK(dev == nullptr);
  const std::string msg = nnp_last_error_message();
  CHECK(has_text(msg, "'nonexistent'"));
  CHECK(has_text(msg, "available plugins:"));
  size_t n = 0;
  REQUIRE(nnp_get_devices(nullptr, &n) == NNP_STATUS_OK);
  std::vector<nnp_device*> devs(n);
  REQUIRE(nnp_get_devices(devs.data(), &n) == NNP_STATUS_OK);
  for (nnp_device* d : devs) {
    nnp_device_props p{};
    p.struct_size = sizeof(p);
    REQUIRE(nnp_device_get_props(d, &p) == NNP_STATUS_OK);
    const std::string plugin = p.plugin_name;
    CHECK(has_text(msg, plugin));  // every plugin with a device is listed
  }
}

TEST_CASE("loader: status strings are distinct and never NULL") {
  std::set<std::string> seen;
  for (int s = NNP_STATUS_OK; s <= NNP_STATUS_LOAD_FAILED; ++s) {
    const char* text = nnp_status_string(static_cast<nnp_status>(s));
    REQUIRE(text != nullptr);
    CHECK(std::string(text) != "unknown status");
    seen.insert(text);
  }
  CHECK(seen.size() == static_cast<size_t>(NNP_STATUS_LOAD_FAILED) + 1);
  CHECK(std::string(nnp_status_string(static_cast<nnp_status>(-1))) == "unknown status");
  CHECK(std::string(nnp_status_string(NNP_STATUS_VENDOR_BASE)) == "unknown status");
}

TEST_CASE("loader: concurrent default loading and enumeration from 8 threads") {
  std::atomic<int> failures{0};
  std::vector<size_t> counts(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([t, &failures, &counts] {
      for (int rep = 0; rep < 50; ++rep) {
        if (nnp_load_default_plugins() != NNP_STATUS_OK) ++failures;
        size_t n = 0;
        if (nnp_get_devices(nullptr, &n) != NNP_STATUS_OK) ++failures;
        std::vector<nnp_device*> devs(n);
        size_t n2 = n;
        if (nnp_get_devices(devs.data(), &n2) != NNP_STATUS_OK || n2 != n) ++failures;
        size_t nrec = 0;
        if (nnp_get_load_records(nullptr, &nrec) != NNP_STATUS_OK) ++failures;
        nnp_device* d = nullptr;
        const nnp_status st = nnp_get_device("auto", &d);
        if (st != NNP_STATUS_OK && st != NNP_STATUS_NOT_FOUND) ++failures;
        counts[static_cast<size_t>(t)] = n;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
  for (size_t c : counts) CHECK(c == counts[0]);
}
