#include "src/cli/ParseErrors.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "src/core/Error.hpp"
#include "src/core/JsonKeys.hpp"

namespace deepkf::cli {
namespace {

// The deepest command recognised: deepkf, deepkf test, deepkf data summary.
const CLI::App& command_given(const CLI::App& app) {
  const CLI::App* cmd = &app;
  while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();
  return *cmd;
}

std::string command_path(const CLI::App& cmd) {
  return cmd.get_parent() == nullptr ? "deepkf" : command_path(*cmd.get_parent()) + " " + cmd.get_name();
}

std::vector<std::string> command_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::App* sub : cmd.get_subcommands([](const CLI::App* a) { return !a->get_name().empty(); })) {
    names.push_back(sub->get_name());
  }
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// A word CLI11 left over that looks like an option; "-100" is a value (change-bias -b takes negative ones).
bool is_option(const std::string& word) {
  return word.size() >= 2 && word[0] == '-' && word != "--" &&
         !(std::isdigit(static_cast<unsigned char>(word[1])) || word[1] == '.');
}

// The long option names a command accepts: its own and those of the commands above it (which accept
// -l, -v and the backend options after the command too).
std::vector<std::string> long_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::App* app = &cmd; app != nullptr; app = app->get_parent()) {
    for (const CLI::Option* opt : app->get_options()) {
      for (const auto& name : opt->get_lnames()) names.push_back(name);
    }
  }
  return names;
}

std::string unknown_command(const CLI::App& cmd, const std::string& word,
                            const std::vector<std::string>& names) {
  std::string message = "unknown command \"" + word + "\"";
  if (cmd.get_parent() != nullptr) message += " for " + command_path(cmd);
  const std::string near = nearest_key(word, names);
  if (!near.empty()) return message + "; did you mean \"" + near + "\"?";
  return message + "; the commands are " + joined(names);
}

std::string unknown_option(const CLI::App& cmd, const std::string& word) {
  const bool is_long = word.rfind("--", 0) == 0;
  // "--modle=m.pt" and "-xvalue" name the option before the value.
  const std::string name = is_long ? word.substr(0, word.find('=')) : word.substr(0, 2);
  const std::string message = "unknown option " + name + " for " + command_path(cmd);
  const std::string near = is_long ? nearest_key(name.substr(2), long_names(cmd)) : "";
  if (!near.empty()) return message + "; did you mean --" + near + "?";
  return message + " (" + command_path(cmd) + " --help lists its options)";
}

}  // namespace

std::string parse_error_message(const CLI::App& app, const CLI::ParseError& error) {
  const CLI::App& cmd = command_given(app);
  const std::vector<std::string> left = app.remaining(/*recurse=*/true);
  const std::vector<std::string> commands = command_names(cmd);
  const auto word = std::find_if_not(left.begin(), left.end(), is_option);
  // Where a command is expected, a plain word is that command misspelt, and the options depend on it.
  if (!commands.empty() && word != left.end()) return unknown_command(cmd, *word, commands);
  const auto option = std::find_if(left.begin(), left.end(), is_option);
  if (option != left.end()) return unknown_option(cmd, *option);
  if (word != left.end() && dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    return "unexpected argument \"" + *word + "\" for " + command_path(cmd);
  }
  if (!commands.empty() && dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    return command_path(cmd) + " needs a command: " + joined(commands);
  }
  // CLI11's own words; those about a missing or surplus value point to the usage, except a file or value
  // that is not valid ("INPUT: File does not exist: in.json"), which says all there is.
  const std::string what = first_line(error.what());
  if (dynamic_cast<const CLI::ValidationError*>(&error) != nullptr) return what;
  return what + " (" + command_path(cmd) + " --help shows the usage)";
}

}  // namespace deepkf::cli
