/* Implements: the renames of `lmrt run --init W --init-map FROM=TO`, from the names of
   the tensors in W to the names of the plan's parameters, so that a pretrained model's
   weights start a plan whose parameters are named otherwise (a prefix, an encoder
   inside a larger model, a head that is not carried over):
     'encoder.*=*'        encoder.blocks.0.w  ->  blocks.0.w
     '*=backbone.*'       blocks.0.w          ->  backbone.blocks.0.w
     'mlm.*='             mlm.bias            ->  (not loaded)
     'wte=embed.tokens'   one tensor renamed
   FROM matches a whole name, its one optional '*' any run of characters (possibly
   empty); TO takes the matched run in place of its '*'. The first rule that matches a
   name applies; a name no rule matches keeps its name. TO may list several names,
   comma-separated: the tensor loads into each (a frozen reference copy of a policy):
     '*=*,ref.*'          layer.0.w           ->  layer.0.w and ref.layer.0.w */
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace lmrt {

struct InitRename {
  std::string from;
  std::vector<std::string> to;  // empty: the tensor is not loaded
};

/* Parses each "FROM=TO[,TO...]"; throws lmrt::Error naming the spec for a missing '=',
   an empty FROM, an empty name in a list, more than one '*' in FROM or in a TO, or a
   '*' in a TO without one in FROM. */
std::vector<InitRename> parseInitMap(const std::vector<std::string> &specs);

/* The plan names the file's tensor `name` loads into: one, several (a list in TO), or
   none when a rule drops it. */
std::vector<std::string> mapInitName(const std::vector<InitRename> &rules, const std::string &name);

}  // namespace lmrt
