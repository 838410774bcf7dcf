#include "core/probe_config.h"

#include <algorithm>
#include <charconv>

#include "core/probe_config_json.h"
#include "core/strict_json.h"

namespace wctmon {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxProbeMs = 24LL * 3600 * 1000;

Error invalid(std::string why) { return Error{ErrorCode::kInvalidArgument, std::move(why)}; }

bool validHostName(std::string_view host) {
  return !host.empty() && host.size() <= 253 && std::all_of(host.begin(), host.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
  });
}

}  // namespace

Result<Endpoint> parseEndpoint(std::string_view text) {
  Endpoint out;
  std::string_view port;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return invalid("\"" + std::string(text) + "\" is not [IPV6]:PORT");
    }
    out.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
    if (out.host.empty() ||
        out.host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) {
      return invalid("\"" + out.host + "\" is not an IPv6 address");
    }
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return invalid("\"" + std::string(text) + "\" has no port (HOST:PORT)");
    }
    out.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
    if (!validHostName(out.host)) {
      return invalid("\"" + out.host + "\" is not a host name or an IPv4 address");
    }
  }
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), out.port);
  if (ec != std::errc() || end != port.data() + port.size() || out.port < 1 || out.port > 65535) {
    return invalid("\"" + std::string(port) + "\" is not a port (1 to 65535)");
  }
  return out;
}

Result<HttpUrl> parseHttpUrl(std::string_view text) {
  HttpUrl out;
  std::string_view rest;
  if (text.starts_with("http://")) {
    rest = text.substr(7);
  } else if (text.starts_with("https://")) {
    out.tls = true;
    rest = text.substr(8);
  } else {
    return invalid("\"" + std::string(text) + "\" is not an http:// or https:// URL");
  }
  const auto slash = rest.find_first_of("/?");
  const auto authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    out.target = std::string(rest.substr(slash));
    if (out.target.front() == '?') out.target.insert(0, "/");
  }
  if (authority.find('@') != std::string_view::npos) {
    return invalid("credentials in the URL are not supported");
  }
  const bool has_port = authority.starts_with('[') ? authority.find("]:") != std::string_view::npos
                                                   : authority.find(':') != std::string_view::npos;
  auto endpoint = parseEndpoint(has_port ? std::string(authority)
                                         : std::string(authority) + (out.tls ? ":443" : ":80"));
  if (!endpoint) return endpoint.error();
  out.endpoint = std::move(*endpoint);
  if (std::any_of(out.target.begin(), out.target.end(),
                  [](char c) { return c == ' ' || c == '\r' || c == '\n' || c == '\0'; })) {
    return invalid("the URL's path holds a space or a control character");
  }
  return out;
}

std::string_view probeTypeName(ProbeConfig::Type type) {
  switch (type) {
    case ProbeConfig::Type::kTcp:
      return "tcp";
    case ProbeConfig::Type::kHttp:
      return "http";
    case ProbeConfig::Type::kGrpcHealth:
      return "grpc_health";
    case ProbeConfig::Type::kUnix:
      return "unix";
    case ProbeConfig::Type::kExec:
      return "exec";
  }
  return "?";
}

std::string Endpoint::text() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

std::string ProbeConfig::describe() const {
  switch (type) {
    case Type::kTcp:
      return "tcp " + endpoint.text();
    case Type::kHttp:
      return std::string(url.tls ? "https://" : "http://") + url.endpoint.text() + url.target;
    case Type::kGrpcHealth:
      return "grpc health " + endpoint.text() + (service.empty() ? "" : " " + service);
    case Type::kUnix:
      return "unix " + path;
    case Type::kExec: {
      std::string out = "exec";
      for (const auto& a : command) out += " " + a;
      return out;
    }
  }
  return "?";
}

bool readProbe(const json& j, const std::string& pointer, ProbeConfig& probe,
               std::vector<ConfigError>& errors) {
  ObjectReader r(j, pointer, errors);
  if (!r.ok()) return false;
  const auto before = errors.size();
  std::string type;
  r.choice("type", type, {"tcp", "http", "grpc_health", "unix", "exec"});
  if (type.empty()) {
    if (!j.contains("type")) {
      r.fail(r.child("type"), "is required: tcp, http, grpc_health, unix or exec");
    }
    // Without a type nothing else can be judged: its keys are not also "unknown".
    for (const auto& [key, value] : j.items()) (void)r.find(key);
  }
  const auto needs = [&](std::string_view key) {
    if (!j.contains(key)) r.fail(r.child(key), "is required for a " + type + " probe");
  };
  const auto notFor = [&](std::initializer_list<std::string_view> keys) {
    for (const auto key : keys) {
      if (r.find(key) != nullptr) {
        r.fail(r.child(key), "does not apply to a " + type + " probe");
      }
    }
  };
  std::string text;
  if (type == "tcp" || type == "grpc_health") {
    probe.type = type == "tcp" ? ProbeConfig::Type::kTcp : ProbeConfig::Type::kGrpcHealth;
    needs("address");
    if (r.string("address", text)) {
      auto endpoint = parseEndpoint(text);
      if (endpoint) {
        probe.endpoint = std::move(*endpoint);
      } else {
        r.fail(r.child("address"), endpoint.error().message);
      }
    }
    if (type == "grpc_health") r.string("service", probe.service, true);
    notFor({"url", "command", "path", "status", "body_contains"});
  } else if (type == "http") {
    probe.type = ProbeConfig::Type::kHttp;
    needs("url");
    if (r.string("url", text)) {
      auto url = parseHttpUrl(text);
      if (url) {
        probe.url = std::move(*url);
      } else {
        r.fail(r.child("url"), url.error().message);
      }
    }
    std::int64_t status = probe.status;
    r.integer("status", status, 100, 599);
    probe.status = static_cast<int>(status);
    r.string("body_contains", probe.body_contains);
    notFor({"address", "command", "path", "service"});
  } else if (type == "unix") {
    probe.type = ProbeConfig::Type::kUnix;
    needs("path");
    if (r.string("path", probe.path) && !probe.path.starts_with('/')) {
      r.fail(r.child("path"), "must be an absolute path");
    }
    notFor({"address", "url", "command", "status", "body_contains", "service"});
  } else if (type == "exec") {
    probe.type = ProbeConfig::Type::kExec;
    needs("command");
    if (const json* c = r.find("command")) {
      probe.command.clear();
      if (c->is_string() && !c->get<std::string>().empty()) {
        probe.command = {c->get<std::string>()};
        probe.shell = true;
      } else if (c->is_array() && !c->empty() &&
                 std::all_of(c->begin(), c->end(), [](const json& a) {
                   return a.is_string() && !a.get<std::string>().empty() &&
                          a.get<std::string>().find('\0') == std::string::npos;
                 })) {
        probe.command = c->get<std::vector<std::string>>();
        probe.shell = false;
      } else {
        r.fail(r.child("command"),
               "must be a shell command line or a non-empty array of non-empty strings (the "
               "program and its arguments)");
      }
    }
    notFor({"address", "url", "path", "status", "body_contains", "service"});
  }
  r.milliseconds("interval_ms", probe.interval, 100, kMaxProbeMs);
  r.milliseconds("timeout_ms", probe.timeout, 10, kMaxProbeMs);
  r.unsignedValue("failures", probe.failures, 1, 1000);
  r.unsignedValue("successes", probe.successes, 1, 1000);
  if (probe.timeout > probe.interval) {
    r.fail(r.child("timeout_ms"), "must not be longer than interval_ms (one probe in flight)");
  }
  return errors.size() == before;
}

json probeToJson(const ProbeConfig& probe) {
  json j;
  j["type"] = std::string(probeTypeName(probe.type));
  switch (probe.type) {
    case ProbeConfig::Type::kTcp:
      j["address"] = probe.endpoint.text();
      break;
    case ProbeConfig::Type::kGrpcHealth:
      j["address"] = probe.endpoint.text();
      j["service"] = probe.service;
      break;
    case ProbeConfig::Type::kHttp:
      j["url"] = probe.describe();
      j["status"] = probe.status;
      if (!probe.body_contains.empty()) j["body_contains"] = probe.body_contains;
      break;
    case ProbeConfig::Type::kUnix:
      j["path"] = probe.path;
      break;
    case ProbeConfig::Type::kExec:
      if (probe.shell && !probe.command.empty()) {
        j["command"] = probe.command.front();
      } else {
        j["command"] = probe.command;
      }
      break;
  }
  j["interval_ms"] = probe.interval.count();
  j["timeout_ms"] = probe.timeout.count();
  j["failures"] = probe.failures;
  j["successes"] = probe.successes;
  return j;
}

}  // namespace wctmon
