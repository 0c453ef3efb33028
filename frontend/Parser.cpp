//===- Parser.cpp - Recursive-descent parser of the .lm language ----------===//
//
// One method per grammar rule of Parser.h. Errors set `failed` and every rule
// returns early once it is set, so only the first error is reported (later
// ones would mostly be consequences of it).
//
//===----------------------------------------------------------------------===//
#include "frontend/Parser.h"

#include <algorithm>

namespace mlir::lm {

using namespace ast;

namespace {

class Parser {
public:
  Parser(std::vector<Token> toks, const SyntaxErrorHandler &onError)
      : toks(std::move(toks)), onError(onError) {
    // A lexer error ends the stream with an Error token it already reported.
    if (!this->toks.empty() && this->toks.back().kind == Token::Kind::Error)
      lexFailed = true;
  }

  std::optional<Module> module() {
    Module m;
    skipNewlines();
    while (!failed && cur().kind != Token::Kind::Eof) {
      switch (cur().kind) {
      case Token::Kind::KwConfig:
        if (m.configLoc)
          return fail(cur().loc, "a second 'config' section (the first is at " +
                                     at(*m.configLoc) + ")"),
                 std::nullopt;
        m.configLoc = cur().loc;
        settings("config", m.config);
        break;
      case Token::Kind::KwTrain:
        if (m.trainLoc)
          return fail(cur().loc, "a second 'train' section (the first is at " +
                                     at(*m.trainLoc) + ")"),
                 std::nullopt;
        m.trainLoc = cur().loc;
        settings("train", m.train);
        break;
      case Token::Kind::KwBlock:
      case Token::Kind::KwModel:
      case Token::Kind::KwObjective:
        function(m);
        break;
      case Token::Kind::KwImport: {
        Import imp;
        imp.loc = take().loc;
        if (!is(Token::Kind::String)) {
          fail(cur().loc, "expected a file name in quotes after 'import', found " + describe(cur()));
          break;
        }
        imp.path = take().text;
        if (is(Token::Kind::LBrace)) {
          // { block a, model b }: the definitions taken from a zoo file.
          const Token open = take();
          do {
            skipNewlines();
            if (!is(Token::Kind::KwBlock) && !is(Token::Kind::KwModel)) {
              fail(cur().loc, "expected 'block NAME' or 'model NAME' in the import list, found " + describe(cur()));
              break;
            }
            Import::Item item;
            item.loc = cur().loc;
            item.model = take().kind == Token::Kind::KwModel;
            item.name = identifier(std::string("a name after '") + (item.model ? "model" : "block") + "'");
            if (failed)
              break;
            imp.items.push_back(std::move(item));
            skipNewlines();
          } while (is(Token::Kind::Comma) && (take(), true));
          if (failed || !expectClose(Token::Kind::RBrace, open, "'}' closing the import list"))
            break;
        }
        m.imports.push_back(std::move(imp));
        endOfStatement();
        break;
      }
      case Token::Kind::KwPreset: {
        Preset p;
        p.loc = cur().loc;
        Token kw = take();
        p.name = identifier("a preset name after 'preset'");
        if (failed)
          break;
        for (const Preset &other : m.presets)
          if (other.name == p.name) {
            fail(p.loc, "a second preset '" + p.name + "' (the first is at " + at(other.loc) + ")");
            break;
          }
        if (failed)
          break;
        --idx; // presetBody() consumes the keyword: step back onto the name
        presetBody(p);
        m.presets.push_back(std::move(p));
        (void)kw;
        break;
      }
      case Token::Kind::Ident:
        // `export` is a keyword only here, at the start of a top-level section.
        if (cur().text == "export") {
          exportSection(m);
          break;
        }
        [[fallthrough]];
      default:
        fail(cur().loc, "expected 'config', 'preset', 'import', 'block', 'model', 'objective', "
                        "'train' or 'export', found " +
                            describe(cur()));
        break;
      }
      skipNewlines();
    }
    if (failed)
      return std::nullopt;
    return m;
  }

  ExprPtr wholeExpression() {
    ExprPtr e = expr();
    skipNewlines();
    if (!failed && cur().kind != Token::Kind::Eof)
      fail(cur().loc, "unexpected " + describe(cur()) + " after the expression");
    return failed ? nullptr : std::move(e);
  }

private:
  std::vector<Token> toks;
  const SyntaxErrorHandler &onError;
  size_t idx = 0;
  bool failed = false;
  bool lexFailed = false;
  /// Active expr() and nested unary() calls: the parser's own recursion,
  /// which `((((x))))` drives without building any node.
  int nesting = 0;

  const Token &cur() const { return toks[idx]; }
  const Token &peekTok(size_t n = 1) const {
    return toks[std::min(idx + n, toks.size() - 1)];
  }
  bool is(Token::Kind k) const { return cur().kind == k; }
  Token take() {
    Token t = toks[idx];
    if (idx + 1 < toks.size())
      ++idx;
    return t;
  }
  void skipNewlines() {
    while (is(Token::Kind::Newline))
      take();
  }

  void fail(Loc loc, const std::string &msg) {
    if (failed)
      return;
    failed = true;
    // The lexer already reported the unexpected character that cut the
    // token stream short; anything said about the truncated stream is noise.
    if (lexFailed)
      return;
    onError(loc, msg);
  }

  /// Consumes a token of kind `k` or reports "expected <what>, found ...".
  bool expect(Token::Kind k, const std::string &what) {
    if (failed)
      return false;
    if (!is(k)) {
      fail(cur().loc, "expected " + what + ", found " + describe(cur()));
      return false;
    }
    take();
    return true;
  }

  /// Consumes the closing bracket matching `open`. At end of file the error
  /// points at the opener ("never closed"); elsewhere at the offending token.
  bool expectClose(Token::Kind k, const Token &open, const std::string &what) {
    if (failed)
      return false;
    if (is(k)) {
      take();
      return true;
    }
    const char *closeText = k == Token::Kind::RParen     ? "')'"
                            : k == Token::Kind::RBracket ? "']'"
                                                         : "'}'";
    if (is(Token::Kind::Eof))
      fail(open.loc, "unterminated " + what + ": '" + open.text + "' is never closed");
    else
      fail(cur().loc, "expected " + std::string(closeText) + " to close '" + open.text +
                          "' at " + at(open.loc) + ", found " + describe(cur()));
    return false;
  }

  /// Between the items of a bracketed list: consumes a `,`, or accepts the
  /// closing bracket without consuming it; anything else is an error naming
  /// the opener, which is usually what was left unclosed.
  void separator(Token::Kind close, const Token &open) {
    if (failed || is(close) || is(Token::Kind::Eof))
      return;
    if (is(Token::Kind::Comma)) {
      take();
      return;
    }
    const char *closeText = close == Token::Kind::RParen ? "')'" : "']'";
    fail(cur().loc, std::string("expected ',' or ") + closeText + " to close '" + open.text +
                        "' at " + at(open.loc) + ", found " + describe(cur()));
  }

  std::string identifier(const std::string &what, Loc *loc = nullptr) {
    if (failed)
      return "";
    if (!is(Token::Kind::Ident)) {
      fail(cur().loc, "expected " + what + ", found " + describe(cur()));
      return "";
    }
    if (loc)
      *loc = cur().loc;
    return take().text;
  }

  /// After a statement: a newline, `;`, or the closing `}` of the body.
  void endOfStatement() {
    if (failed || is(Token::Kind::RBrace) || is(Token::Kind::Eof))
      return;
    if (!is(Token::Kind::Newline)) {
      fail(cur().loc, "expected end of line or ';' after the statement, found " + describe(cur()));
      return;
    }
    skipNewlines();
  }

  //--- Top level -------------------------------------------------------------//

  void settings(const std::string &section, std::vector<Setting> &out) {
    take(); // 'config' | 'train'
    skipNewlines();
    Token open = cur();
    if (!expect(Token::Kind::LBrace, "'{' after '" + section + "'"))
      return;
    skipNewlines();
    while (!failed && !is(Token::Kind::RBrace) && !is(Token::Kind::Eof))
      if (!setting("a setting name (name = value) in '" + section + "'", /*records=*/true, out))
        return;
    expectClose(Token::Kind::RBrace, open, "'" + section + "' section");
  }

  /// One `name = value` statement of a section (`what` names what may stand
  /// there); `records` lets the value be a `{ name = value, ... }` record.
  bool setting(const std::string &what, bool records, std::vector<Setting> &out) {
    Setting s;
    s.name = identifier(what, &s.loc);
    if (!expect(Token::Kind::Equal, "'=' after '" + s.name + "'"))
      return false;
    s.value = records && is(Token::Kind::LBrace) ? record(s.name) : expr();
    out.push_back(std::move(s));
    endOfStatement();
    return true;
  }

  /// A preset's `{ setting* [train { setting* }] }` (the name is the current token).
  void presetBody(Preset &p) {
    const std::string section = "preset " + p.name;
    take(); // the name
    skipNewlines();
    Token open = cur();
    if (!expect(Token::Kind::LBrace, "'{' after '" + section + "'"))
      return;
    skipNewlines();
    while (!failed && !is(Token::Kind::RBrace) && !is(Token::Kind::Eof)) {
      if (is(Token::Kind::KwTrain)) {
        if (p.trainLoc)
          return fail(cur().loc, "a second 'train' section in " + section + " (the first is at " +
                                     at(*p.trainLoc) + ")");
        p.trainLoc = cur().loc;
        settings(section + " train", p.train);
        skipNewlines();
        continue;
      }
      if (!setting("a setting name (name = value) or 'train { ... }' in '" + section + "'", /*records=*/false,
                   p.settings))
        return;
    }
    expectClose(Token::Kind::RBrace, open, "'" + section + "' section");
  }

  /// `{ name = value, ... }` (a train setting such as `mesh = { data = 2, tensor = 1 }`):
  /// a Call of `name` with keyword arguments only, read like one.
  ExprPtr record(const std::string &name) {
    auto e = std::make_unique<Expr>(Expr::Kind::Call, cur().loc);
    e->name = name;
    Token open = take();
    skipNewlines();
    while (!failed && !is(Token::Kind::RBrace) && !is(Token::Kind::Eof)) {
      KeywordArg kw;
      kw.name = identifier("a field (name = value) in '" + name + " = { ... }'", &kw.loc);
      if (!expect(Token::Kind::Equal, "'=' after '" + kw.name + "'"))
        return nullptr;
      kw.value = expr();
      e->kwargs.push_back(std::move(kw));
      if (!failed && is(Token::Kind::Comma))
        take();
      skipNewlines();
    }
    expectClose(Token::Kind::RBrace, open, "'" + name + " = { ... }'");
    return failed ? nullptr : finish(std::move(e));
  }

  /// `export hf "Arch" { config { ... } "pattern" -> "name" [, "name"] [transpose] [tied "name"]
  ///                     omit "pattern" [, "pattern"] ... }`
  void exportSection(Module &m) {
    Export e;
    e.loc = take().loc;
    e.format = identifier("a format after 'export' (hf)", &e.formatLoc);
    if (failed)
      return;
    if (!is(Token::Kind::String)) {
      fail(cur().loc, "expected the " + e.format + " model class in quotes (e.g. \"GPT2LMHeadModel\"), found " +
                          describe(cur()));
      return;
    }
    e.architecture = take().text;
    skipNewlines();
    Token open = cur();
    if (!expect(Token::Kind::LBrace, "'{' after the model class"))
      return;
    skipNewlines();
    std::optional<Loc> configLoc;
    while (!failed && !is(Token::Kind::RBrace) && !is(Token::Kind::Eof)) {
      if (is(Token::Kind::KwConfig)) {
        if (configLoc) {
          fail(cur().loc, "a second 'config' in the export section (the first is at " + at(*configLoc) + ")");
          return;
        }
        configLoc = cur().loc;
        settings("export config", e.config);
        endOfStatement();
        continue;
      }
      if (is(Token::Kind::Ident) && cur().text == "omit") {
        // `omit "p" [, "p"]*`: one rule per path, each of which must match.
        take();
        bool first = true;
        do {
          if (!first)
            take(); // ','
          first = false;
          if (!is(Token::Kind::String)) {
            fail(cur().loc, "expected a parameter path in quotes after 'omit', found " + describe(cur()));
            return;
          }
          ExportRule r;
          r.loc = cur().loc;
          r.pattern = take().text;
          r.omit = true;
          e.rules.push_back(std::move(r));
        } while (is(Token::Kind::Comma));
        endOfStatement();
        continue;
      }
      ExportRule r;
      r.loc = cur().loc;
      if (!is(Token::Kind::String)) {
        fail(cur().loc, "expected 'config', 'omit' or a parameter path in quotes (\"layer.{i}.w\" -> \"...\"), "
                        "found " + describe(cur()));
        return;
      }
      r.pattern = take().text;
      if (!expect(Token::Kind::Arrow, "'->' and a name after \"" + r.pattern + "\""))
        return;
      do {
        if (!r.targets.empty())
          take(); // ','
        if (!is(Token::Kind::String)) {
          fail(cur().loc, "expected a name in quotes after '->', found " + describe(cur()));
          return;
        }
        r.targets.push_back(take().text);
      } while (is(Token::Kind::Comma));
      if (is(Token::Kind::Ident) && cur().text == "transpose") {
        take();
        r.transpose = true;
      }
      if (is(Token::Kind::Ident) && cur().text == "tied") {
        do {
          take(); // 'tied' or ','
          if (!is(Token::Kind::String)) {
            fail(cur().loc, "expected a name in quotes after 'tied', found " + describe(cur()));
            return;
          }
          r.tied.push_back(take().text);
        } while (is(Token::Kind::Comma));
      }
      e.rules.push_back(std::move(r));
      endOfStatement();
    }
    expectClose(Token::Kind::RBrace, open, "'export' section");
    if (!failed)
      m.exports.push_back(std::move(e));
  }

  void function(Module &m) {
    Function f;
    Token kw = take();
    f.kind = kw.kind == Token::Kind::KwBlock   ? Function::Kind::Block
             : kw.kind == Token::Kind::KwModel ? Function::Kind::Model
                                               : Function::Kind::Objective;
    f.loc = kw.loc;
    f.name = identifier(std::string("a name after '") + kindName(f.kind) + "'", &f.nameLoc);
    if (failed)
      return;
    Token open = cur();
    if (!expect(Token::Kind::LParen, "'(' after " + std::string(kindName(f.kind)) + " '" + f.name + "'"))
      return;
    while (!failed && !is(Token::Kind::RParen) && !is(Token::Kind::Eof)) {
      Parameter p;
      p.name = identifier("a parameter name", &p.loc);
      if (!failed && is(Token::Kind::Colon)) {
        take();
        p.type = type();
      }
      f.params.push_back(std::move(p));
      separator(Token::Kind::RParen, open);
    }
    expectClose(Token::Kind::RParen, open, "parameter list of '" + f.name + "'");
    if (!failed && is(Token::Kind::Arrow)) {
      take();
      f.resultType = type();
    }
    if (failed)
      return;
    skipNewlines();
    Token body = cur();
    if (!expect(Token::Kind::LBrace, "'{' to open the body of '" + f.name + "'"))
      return;
    skipNewlines();
    while (!failed && !is(Token::Kind::RBrace) && !is(Token::Kind::Eof)) {
      statement(f, body);
      endOfStatement();
    }
    f.closeLoc = cur().loc;
    expectClose(Token::Kind::RBrace, body,
                std::string("body of ") + kindName(f.kind) + " '" + f.name + "'");
    if (!failed)
      m.functions.push_back(std::move(f));
  }

  TypeExpr type() {
    TypeExpr t;
    t.elementType = identifier("an element type (f32 or i32)", &t.loc);
    if (!failed && is(Token::Kind::LBracket))
      dims(t);
    return t;
  }

  /// `[e, e, ...]` into t.dims.
  void dims(TypeExpr &t) {
    Token open = take();
    while (!failed && !is(Token::Kind::RBracket) && !is(Token::Kind::Eof)) {
      t.dims.push_back(expr());
      separator(Token::Kind::RBracket, open);
    }
    expectClose(Token::Kind::RBracket, open, "shape");
  }

  void statement(Function &f, const Token &bodyOpen) {
    // `frozen param ...`: `frozen` is a modifier only right before `param`
    // (elsewhere it stays an ordinary name).
    bool frozen = false;
    ast::Loc frozenLoc;
    if (is(Token::Kind::Ident) && cur().text == "frozen" && peekTok().kind == Token::Kind::KwParam) {
      frozenLoc = take().loc;
      frozen = true;
    }
    if (is(Token::Kind::KwParam)) {
      Stmt s(Stmt::Kind::Param, frozen ? frozenLoc : take().loc);
      if (frozen)
        take();
      s.frozen = frozen;
      s.name = identifier("a parameter name after 'param'", &s.nameLoc);
      if (!expect(Token::Kind::Colon, "':' and a shape after 'param " + s.name + "'"))
        return;
      s.paramShape.loc = cur().loc;
      if (is(Token::Kind::Ident))
        s.paramShape.elementType = take().text;
      if (!is(Token::Kind::LBracket)) {
        fail(cur().loc, "expected a shape '[...]' for parameter '" + s.name + "', found " +
                            describe(cur()));
        return;
      }
      dims(s.paramShape);
      if (!expect(Token::Kind::Equal, "'=' and an initializer after the shape of '" + s.name + "'"))
        return;
      s.value = expr();
      f.body.push_back(std::move(s));
      return;
    }
    if (is(Token::Kind::KwReturn)) {
      Stmt s(Stmt::Kind::Return, take().loc);
      s.value = expr();
      // `return a, b`: several values, as a tuple.
      if (!failed && is(Token::Kind::Comma)) {
        auto tuple = std::make_unique<Expr>(Expr::Kind::Tuple, s.value->loc);
        tuple->args.push_back(std::move(s.value));
        while (!failed && is(Token::Kind::Comma)) {
          take();
          tuple->args.push_back(expr());
        }
        s.value = failed ? nullptr : finish(std::move(tuple));
      }
      f.body.push_back(std::move(s));
      return;
    }
    // `name = expr` at the current token, as a statement of `kind` that starts at `loc`.
    auto nameEqualsExpr = [&](Stmt::Kind kind, Loc loc) {
      Stmt s(kind, loc);
      s.nameLoc = cur().loc;
      s.name = take().text;
      take(); // '='
      s.value = expr();
      f.body.push_back(std::move(s));
    };
    // `metric name = expr`: `metric` is a keyword only here, so it stays
    // usable as a name elsewhere.
    if (is(Token::Kind::Ident) && cur().text == "metric" && peekTok().kind == Token::Kind::Ident &&
        peekTok(2).kind == Token::Kind::Equal) {
      Loc loc = take().loc;
      nameEqualsExpr(Stmt::Kind::Metric, loc);
      return;
    }
    // `a, b = expr`: unpacks the values a block returns.
    if (is(Token::Kind::Ident) && peekTok().kind == Token::Kind::Comma) {
      Stmt s(Stmt::Kind::Assign, cur().loc);
      while (!failed) {
        Loc loc;
        std::string name = identifier("a name to assign", &loc);
        for (const std::string &n : s.names)
          if (n == name)
            fail(loc, "'" + name + "' is assigned twice in one statement");
        s.names.push_back(name);
        s.nameLocs.push_back(loc);
        if (!is(Token::Kind::Comma))
          break;
        take();
      }
      if (!expect(Token::Kind::Equal, "'=' after the names to assign"))
        return;
      s.name = s.names[0];
      s.nameLoc = s.nameLocs[0];
      s.value = expr();
      f.body.push_back(std::move(s));
      return;
    }
    if (is(Token::Kind::Ident) && peekTok().kind == Token::Kind::Equal) {
      nameEqualsExpr(Stmt::Kind::Assign, cur().loc);
      return;
    }
    std::string hint;
    if (is(Token::Kind::KwBlock) || is(Token::Kind::KwModel) || is(Token::Kind::KwObjective) ||
        is(Token::Kind::KwConfig) || is(Token::Kind::KwTrain))
      hint = " (is a '}' missing to close the body of '" + f.name + "' opened at " +
             at(bodyOpen.loc) + "?)";
    fail(cur().loc, "expected a statement ('name = expr', 'param', 'return' or 'metric name = expr'), found " +
                        describe(cur()) + hint);
  }

  //--- Expressions -----------------------------------------------------------//

  /// Counts one level of parser recursion while it lives.
  struct Nested {
    Parser &p;
    explicit Nested(Parser &p) : p(p) { ++p.nesting; }
    ~Nested() { --p.nesting; }
  };

  void nestedTooDeeply(Loc loc) {
    fail(loc, "expression nested too deeply (more than " + std::to_string(kMaxExprNesting) +
                  " levels)");
  }

  /// Sets the height of a new node from its children and rejects it past the
  /// limit. Left-associative chains (`1 + 1 + ...`) are built by loops, so
  /// this, not the recursion count, is what bounds them.
  ExprPtr finish(ExprPtr e) {
    int below = 0;
    auto see = [&](const ExprPtr &child) {
      if (child)
        below = std::max(below, child->height);
    };
    see(e->lhs);
    see(e->rhs);
    for (const ExprPtr &a : e->args)
      see(a);
    for (const KeywordArg &kw : e->kwargs)
      see(kw.value);
    for (const Subscript &s : e->subscripts) {
      see(s.index);
      see(s.start);
      see(s.limit);
      see(s.step);
    }
    e->height = below + 1;
    if (e->height > kMaxExprNesting) {
      nestedTooDeeply(e->loc);
      return nullptr;
    }
    return e;
  }

  ExprPtr binary(Token op, ExprPtr lhs, ExprPtr rhs) {
    auto e = std::make_unique<Expr>(Expr::Kind::Binary, op.loc);
    e->op = op.text == "<=" ? 'l' : op.text == ">=" ? 'g' : op.text == "==" ? 'e' : op.text == "!=" ? 'n'
                                                                                                     : op.text[0];
    e->lhs = std::move(lhs);
    e->rhs = std::move(rhs);
    return finish(std::move(e));
  }

  /// `arith (cmp arith)?`: comparisons bind loosest and do not chain
  /// (`a < b < c` is an error, not Python's `a < b and b < c`).
  ExprPtr expr() {
    ExprPtr lhs = arith();
    if (failed || !isComparisonToken())
      return lhs;
    Token op = take();
    ExprPtr rhs = arith();
    if (failed)
      return nullptr;
    if (isComparisonToken()) {
      fail(cur().loc, "comparisons do not chain: write gt(a, b) * lt(b, c) or parenthesise");
      return nullptr;
    }
    return binary(op, std::move(lhs), std::move(rhs));
  }

  bool isComparisonToken() const {
    return is(Token::Kind::Less) || is(Token::Kind::Greater) || is(Token::Kind::LessEqual) ||
           is(Token::Kind::GreaterEqual) || is(Token::Kind::EqualEqual) || is(Token::Kind::NotEqual);
  }

  ExprPtr arith() {
    Nested level(*this);
    if (nesting > kMaxExprNesting) {
      nestedTooDeeply(cur().loc);
      return nullptr;
    }
    ExprPtr lhs = term();
    while (!failed && (is(Token::Kind::Plus) || is(Token::Kind::Minus))) {
      Token op = take();
      ExprPtr rhs = term();
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
    return failed ? nullptr : std::move(lhs);
  }

  ExprPtr term() {
    ExprPtr lhs = unary();
    while (!failed && (is(Token::Kind::Star) || is(Token::Kind::Slash) || is(Token::Kind::At))) {
      Token op = take();
      ExprPtr rhs = unary();
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  ExprPtr unary() {
    if (is(Token::Kind::Minus) || is(Token::Kind::Plus)) {
      Nested level(*this);
      if (nesting > kMaxExprNesting) {
        nestedTooDeeply(cur().loc);
        return nullptr;
      }
      Token op = take();
      auto e = std::make_unique<Expr>(Expr::Kind::Unary, op.loc);
      e->op = op.text[0];
      e->lhs = unary();
      return failed ? nullptr : finish(std::move(e));
    }
    return postfix();
  }

  ExprPtr postfix() {
    ExprPtr e = primary();
    while (!failed) {
      if (is(Token::Kind::LParen)) {
        if (e->kind != Expr::Kind::Name) {
          fail(cur().loc, "only a named block, model or builtin can be called");
          return nullptr;
        }
        e = call(std::move(e));
      } else if (is(Token::Kind::LBracket)) {
        e = index(std::move(e));
      } else {
        break;
      }
    }
    return e;
  }

  ExprPtr call(ExprPtr callee) {
    auto e = std::make_unique<Expr>(Expr::Kind::Call, callee->loc);
    e->name = callee->name;
    Token open = take();
    while (!failed && !is(Token::Kind::RParen) && !is(Token::Kind::Eof)) {
      if (is(Token::Kind::Ident) && peekTok().kind == Token::Kind::Equal) {
        KeywordArg kw;
        kw.loc = cur().loc;
        kw.name = take().text;
        take(); // '='
        kw.value = expr();
        e->kwargs.push_back(std::move(kw));
      } else {
        Loc loc = cur().loc;
        ExprPtr arg = expr();
        if (!failed && !e->kwargs.empty()) {
          fail(loc, "positional argument after keyword argument '" + e->kwargs.back().name + "'");
          return nullptr;
        }
        e->args.push_back(std::move(arg));
      }
      separator(Token::Kind::RParen, open);
    }
    expectClose(Token::Kind::RParen, open, "call of '" + e->name + "'");
    return failed ? nullptr : finish(std::move(e));
  }

  ExprPtr index(ExprPtr base) {
    auto e = std::make_unique<Expr>(Expr::Kind::Index, cur().loc);
    e->lhs = std::move(base);
    Token open = take();
    while (!failed && !is(Token::Kind::RBracket) && !is(Token::Kind::Eof)) {
      Subscript s;
      s.loc = cur().loc;
      ExprPtr first;
      if (!is(Token::Kind::Colon))
        first = expr();
      if (!failed && is(Token::Kind::Colon)) {
        take();
        s.isSlice = true;
        s.start = std::move(first);
        if (!is(Token::Kind::Colon) && !is(Token::Kind::Comma) && !is(Token::Kind::RBracket))
          s.limit = expr();
        if (!failed && is(Token::Kind::Colon)) {
          take();
          if (!is(Token::Kind::Comma) && !is(Token::Kind::RBracket))
            s.step = expr();
        }
      } else {
        s.index = std::move(first);
      }
      e->subscripts.push_back(std::move(s));
      separator(Token::Kind::RBracket, open);
    }
    expectClose(Token::Kind::RBracket, open, "subscript");
    if (!failed && e->subscripts.empty())
      fail(open.loc, "empty subscript '[]'");
    return failed ? nullptr : finish(std::move(e));
  }

  ExprPtr primary() {
    if (failed)
      return nullptr;
    Token t = cur();
    switch (t.kind) {
    case Token::Kind::Int: {
      take();
      auto e = std::make_unique<Expr>(Expr::Kind::Int, t.loc);
      e->intValue = t.intValue;
      return e;
    }
    case Token::Kind::Float: {
      take();
      auto e = std::make_unique<Expr>(Expr::Kind::Float, t.loc);
      e->floatValue = t.floatValue;
      return e;
    }
    case Token::Kind::KwTrue:
    case Token::Kind::KwFalse: {
      take();
      auto e = std::make_unique<Expr>(Expr::Kind::Bool, t.loc);
      e->boolValue = t.kind == Token::Kind::KwTrue;
      return e;
    }
    case Token::Kind::Ident: {
      take();
      auto e = std::make_unique<Expr>(Expr::Kind::Name, t.loc);
      e->name = t.text;
      return e;
    }
    case Token::Kind::String: {
      take();
      auto e = std::make_unique<Expr>(Expr::Kind::String, t.loc);
      e->name = t.text;
      return e;
    }
    case Token::Kind::LParen: {
      take();
      ExprPtr first = expr();
      if (failed)
        return nullptr;
      if (!is(Token::Kind::Comma)) {
        expectClose(Token::Kind::RParen, t, "parenthesis");
        return failed ? nullptr : std::move(first);
      }
      auto e = std::make_unique<Expr>(Expr::Kind::Tuple, t.loc);
      e->args.push_back(std::move(first));
      while (!failed && is(Token::Kind::Comma)) {
        take();
        if (is(Token::Kind::RParen))
          break;
        e->args.push_back(expr());
      }
      expectClose(Token::Kind::RParen, t, "tuple");
      return failed ? nullptr : finish(std::move(e));
    }
    case Token::Kind::LBracket: {
      take();
      auto e = std::make_unique<Expr>(Expr::Kind::List, t.loc);
      while (!failed && !is(Token::Kind::RBracket) && !is(Token::Kind::Eof)) {
        e->args.push_back(expr());
        separator(Token::Kind::RBracket, t);
      }
      expectClose(Token::Kind::RBracket, t, "list");
      return failed ? nullptr : finish(std::move(e));
    }
    default:
      fail(t.loc, "expected an expression, found " + describe(t));
      return nullptr;
    }
  }
};

} // namespace

std::optional<Module> parseModule(std::string_view source, const SyntaxErrorHandler &onError,
                                  int file) {
  return Parser(lex(source, onError, file), onError).module();
}

ExprPtr parseExpression(std::string_view source, const SyntaxErrorHandler &onError) {
  return Parser(lex(source, onError), onError).wholeExpression();
}

} // namespace mlir::lm
