"""Rewrites of calls, strings and local names that Python reads as the same program (stdlib only).

metamorphic_test.py draws from these beside its rewrites of one line's text. Each works from Python's own parse
(ast and tokenize), so it knows where a call's arguments, a string or a local's every use are:
  - a call's keyword arguments in another order;
  - a plan call's trailing positional arguments passed by keyword, under the names Python would bind them to;
  - a string's quotes swapped (`'x'` for `"x"`);
  - a function's local renamed at every use, a method's instance parameter (`self`) renamed, or an imported name
    imported under another name (`as`), or its module imported instead and the name read as its attribute;
  - a plan or run call's receiver, or its last positional argument, first assigned to a new local on the line before;
  - two adjacent definitions (methods of a class, or functions or classes of a module) in the other order;
  - `x = a if c else b` as an if statement that assigns a or b, or (x a local) as `x = b` then `if c:` / `x = a`;
  - a local's assignment `x = v` preceded by `x = None`;
  - two assignments in a row `a = x` / `b = y` as `a, b = x, y`;
  - a class's __init__, or another of its methods, moved into a new base class just above it, which takes over the
    class's bases;
  - a call on one line split over several, one argument a line, or a call over several lines joined onto one;
  - a function's statement as the body of `with contextlib.nullcontext():` (contextlib imported after the module's
    imports), or a method or class given a decorator that returns what it is given (defined after the imports);
  - a function's statement in a `try` with `finally: pass`, or with `except Exception: raise`;
  - a method's plan() or run() call, its read of the KV cache, a plan's KV dtype, or a `.to(<x>.dtype)` moved into
    a new helper method of the class, or that cast made by a new helper given the tensor and the dtype;
  - a function's plan() or run() call moved into a def nested in it just before the call, given the call's locals
    as parameters or reading them as a closure; a read of the KV cache or a `.to(<x>.dtype)` moved into such a
    closure, which returns it;
  - a `.to(<x>.dtype)` as `.to(dtype=<x>.dtype)`, or with its dtype first assigned to a local;
  - a read of the KV cache, `<pool>.get_key_buffer(i)`, as `<pool>.get_kv_buffer(i)[0]`, or unpacked from it;
  - a plan's query and KV dtypes returned as a tuple by a new helper method and unpacked into two locals;
  - a local's assignment `x = v` (v holding no `.to`, plan or run call) binding a second, unread local too:
    `x = twin = v`;
  - a plan or run call `r.plan(...)` called through the receiver's class, `type(r).plan(r, ...)`.
Each rewrite is (kind, new text, region): the old lines region[0]..region[1] became the new lines
region[0]..region[2] (1-based), and no line outside them changed but for the shift; region None when no line moved;
or region is a function from each old line to its new line, when whole lines moved.
"""

import ast
import io
import re
import tokenize

# BatchMLAPagedAttentionWrapper.plan's parameters in order (../shared/DESIGN.md section 2).
PLAN_PARAMS = ["qo_indptr", "kv_indptr", "kv_indices", "kv_len_arr", "num_heads", "head_dim_ckv", "head_dim_kpe",
               "page_size", "causal", "sm_scale", "q_data_type", "kv_data_type"]
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp,
          ast.GeneratorExp)


class Parsed:
    """One backend's text with its syntax tree, tokens and, for each node, its parent."""

    def __init__(self, text):
        self.text = text
        self.lines = text.split("\n")
        self.tree = ast.parse(text)
        self.tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        self.parent = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line) + 1)
        self.functions = {n.name: n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def offset(self, line, byte_col):
        """The text offset of ast's (1-based line, UTF-8 byte column)."""
        chars = len(self.lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8"))
        return self.starts[line - 1] + chars

    def span(self, node):
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node):
        start, end = self.span(node)
        return self.text[start:end]

    def edited(self, edits):
        """The text with each (start, end, replacement) made; the spans must not overlap."""
        out, at = [], 0
        for start, end, new in sorted(edits):
            out += [self.text[at:start], new]
            at = end
        return "".join(out) + self.text[at:]

    def inside(self, node, kinds):
        """Whether an ancestor of node is one of kinds."""
        node = self.parent.get(node)
        while node is not None:
            if isinstance(node, kinds):
                return True
            node = self.parent.get(node)
        return False

    def call_tokens(self, call):
        """The tokens from a call's `(` to its last `)`, or None when the `(` is not found."""
        start, end = self.span(call)
        inner = [t for t in self.tokens if start <= self.offset_of(t.start) and self.offset_of(t.end) <= end]
        if not inner or inner[-1].string != ")":
            return None
        depth = 0
        for k in range(len(inner) - 1, -1, -1):
            depth += {")": 1, "]": 1, "}": 1, "(": -1, "[": -1, "{": -1}.get(inner[k].string, 0)
            if depth == 0:
                return inner[k:]
        return None

    def offset_of(self, position):  # tokenize's (1-based line, character column)
        return self.starts[position[0] - 1] + position[1]


def arguments(call):
    """A call's positional and keyword arguments in the order they are written."""
    return sorted([*call.args, *call.keywords], key=lambda a: (a.lineno, a.col_offset))


def keywords_reordered(p, call):
    named = [k for k in call.keywords if k.arg is not None]
    if len(named) < 2 or len(named) != len(call.keywords):
        return []
    first, last = named[0], named[-1]
    edits = [(*p.span(first), p.segment(last)), (*p.span(last), p.segment(first))]
    return [("keywords reordered", p.edited(edits), (call.lineno, call.end_lineno, call.end_lineno))]


def plan_parameter_names(p, call):
    """The parameter names a call's positional arguments bind to, as far as the file tells, or None."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in p.functions:
        params = p.functions[func.id].args
        if params.posonlyargs or params.vararg:
            return None
        return [a.arg for a in params.args]
    if isinstance(func, ast.Attribute) and func.attr == "plan" and len(call.args) == len(PLAN_PARAMS):
        # `w.plan` may be FlashInfer's or an alias installed by partial(f, w): keep the names all of them share.
        names = list(PLAN_PARAMS)
        for f in p.functions.values():
            params = [a.arg for a in f.args.args]
            if "plan" in f.name and len(params) == len(PLAN_PARAMS) + 1:
                names = [n if n == m else None for n, m in zip(names, params[1:])]
        return names
    return None


def positionals_by_keyword(p, call):
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return []
    names = plan_parameter_names(p, call)
    if not names or len(names) < len(call.args):
        return []
    out = []
    for first in (len(call.args) - 1, len(call.args) - 2):
        tail = range(first, len(call.args))
        if first < 0 or any(names[k] is None for k in tail):
            continue
        edits = [(*p.span(call.args[k]), f"{names[k]}={p.segment(call.args[k])}") for k in tail]
        out.append((f"{len(tail)} trailing argument(s) by keyword", p.edited(edits), None))
    return out


def split_call(p, call):
    if call.lineno != call.end_lineno or not (call.args or call.keywords):
        return []
    tokens = p.call_tokens(call)
    if tokens is None:
        return []
    indent = re.match(r"\s*", p.lines[call.lineno - 1]).group(0)
    pieces = [p.segment(a) for a in arguments(call)]
    body = "".join(f"\n{indent}        {piece}," for piece in pieces) + f"\n{indent}"
    start, end = p.offset_of(tokens[0].end), p.offset_of(tokens[-1].start)
    return [("call split over lines", p.edited([(start, end, body)]),
             (call.lineno, call.lineno, call.lineno + len(pieces) + 1))]


def joined_call(p, call):
    if call.lineno == call.end_lineno:
        return []
    tokens = p.call_tokens(call)
    if tokens is None or any(t.type == tokenize.COMMENT or (t.type == tokenize.STRING and t.start[0] != t.end[0])
                             for t in tokens):
        return []
    text, previous = "", None
    for t in tokens:
        if t.type in (tokenize.NL, tokenize.NEWLINE):
            continue
        if previous is not None:
            if previous.end[0] == t.start[0]:
                text += p.text[p.offset_of(previous.end):p.offset_of(t.start)]
            elif previous.string not in ("(", "[", "{") and t.string not in (")", "]", "}"):
                text += " "
        text += t.string
        previous = t
    start, end = p.offset_of(tokens[0].start), p.offset_of(tokens[-1].end)
    first = tokens[0].start[0]  # the receiver may end on an earlier line than the `(`
    return [("call joined onto one line", p.edited([(start, end, text)]), (first, call.end_lineno, first))]


def quotes_swapped(p, line):
    out = []
    for t in p.tokens:
        if t.type != tokenize.STRING or t.start[0] != line or t.end[0] != line:
            continue
        m = re.fullmatch(r"([A-Za-z]*)(['\"])(.*)\2", t.string, re.S)
        if not m or "\\" in m.group(3) or "'" in m.group(3) or '"' in m.group(3) or m.group(3).startswith(m.group(2)):
            continue
        other = "'" if m.group(2) == '"' else '"'
        swapped = f"{m.group(1)}{other}{m.group(3)}{other}"
        out.append(("quotes swapped", p.edited([(p.offset_of(t.start), p.offset_of(t.end), swapped)]), None))
    return out


def bound_elsewhere(function, name):
    """Whether name is a parameter of function, declared global or nonlocal in it, bound by an import or an
    except clause, or bound inside a scope nested in it: then renaming every use is not the same program."""
    params = function.args
    if name in [a.arg for a in [*params.posonlyargs, *params.args, *params.kwonlyargs, params.vararg, params.kwarg]
                if a is not None]:
        return True
    for node in ast.walk(function):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
        if isinstance(node, ast.ExceptHandler) and node.name == name:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and name in [a.asname or a.name for a in node.names]:
            return True
        if isinstance(node, ast.Name) and node.id in ("locals", "vars", "eval", "exec"):
            return True
        if hasattr(ast, "MatchAs") and isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == name:
            return True
        if node is not function and isinstance(node, SCOPES):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and inner.id == name and not isinstance(inner.ctx, ast.Load):
                    return True
                if isinstance(inner, ast.arg) and inner.arg == name:
                    return True
    return False


def local_renamed(p, line):
    out = []
    for node in ast.walk(p.tree):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.lineno == line):
            continue
        function = p.parent.get(node)
        while function is not None and not isinstance(function, SCOPES):
            function = p.parent.get(function)
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        new = f"{node.id}_renamed"
        if re.search(rf"\b{new}\b", p.text) or bound_elsewhere(function, node.id):
            continue
        uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == node.id]
        if any(p.inside(n, ast.JoinedStr) for n in uses):  # f-string positions are not exact before Python 3.12
            continue
        out.append(("local renamed", p.edited([(*p.span(n), new) for n in uses]), None))
        break
    return out


def imported_name_uses(p, name):
    """Every read of a name a module-level import binds, or None where rewriting them all would not keep the program:
    a string that names it (a forward annotation, `__all__`; docstrings aside), a store or an f-string use, a scope or
    parameter that binds it again, or another import of it."""
    if any(isinstance(n, ast.Constant) and isinstance(n.value, str) and re.search(rf"\b{name}\b", n.value)
           and not isinstance(p.parent.get(n), ast.Expr) for n in ast.walk(p.tree)):
        return None
    uses = [n for n in ast.walk(p.tree) if isinstance(n, ast.Name) and n.id == name]
    if any(not isinstance(n.ctx, ast.Load) or p.inside(n, ast.JoinedStr) for n in uses):
        return None
    if any(isinstance(n, SCOPES) and getattr(n, "name", None) == name for n in ast.walk(p.tree)):
        return None
    if any(isinstance(n, ast.arg) and n.arg == name for n in ast.walk(p.tree)):
        return None
    if sum(name in [a.asname or a.name for a in n.names] for n in ast.walk(p.tree)
           if isinstance(n, (ast.Import, ast.ImportFrom))) != 1:
        return None
    return uses


def import_renamed(p, line):
    """`from m import X` as `from m import X as X_renamed` (or `import X` likewise) with every use of X renamed."""
    out = []
    for node in ast.walk(p.tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or node.lineno != line or p.inside(node, SCOPES):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        for alias in node.names:
            name = alias.name
            new = f"{name}_renamed"
            if alias.asname or "." in name or name == "*" or re.search(rf"\b{new}\b", p.text):
                continue
            uses = imported_name_uses(p, name)
            if uses is None:
                continue
            start, end = p.span(alias)
            edits = [(start, end, f"{name} as {new}")] + [(*p.span(n), new) for n in uses]
            out.append(("import renamed", p.edited(edits), None))
    return out


def import_as_module(p, line):
    """`from m import X, Y as Z` on one line as `import m as _kvpatch_m<line>`, every use of X and Z then read through
    it (`_kvpatch_m<line>.X`, `_kvpatch_m<line>.Y`): the wrapper, torch's dtypes or partial reached as module
    attributes. Left alone where import_renamed leaves a name alone, and for relative or `__future__` imports."""
    out = []
    for node in ast.walk(p.tree):
        if not isinstance(node, ast.ImportFrom) or node.lineno != line or node.end_lineno != line:
            continue
        if p.inside(node, SCOPES) or node.level or node.module in (None, "__future__"):
            continue
        module = f"_kvpatch_m{line}"
        if re.search(rf"\b{module}\b", p.text):
            continue
        edits = [(*p.span(node), f"import {node.module} as {module}")]
        for alias in node.names:
            uses = None if alias.name == "*" else imported_name_uses(p, alias.asname or alias.name)
            if uses is None:
                break
            edits += [(*p.span(n), f"{module}.{alias.name}") for n in uses]
        else:
            out.append(("import as a module", p.edited(edits), None))
    return out


def self_renamed(p, line):
    """`def m(self, ...)` as `def m(this_renamed, ...)` with every use in its body renamed (line: the def's)."""
    out = []
    for node in ast.walk(p.tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.lineno != line:
            continue
        if not isinstance(p.parent.get(node), ast.ClassDef) or node.decorator_list or not node.args.args:
            continue
        name = node.args.args[0].arg
        new = "this_renamed"
        if re.search(rf"\b{new}\b", p.text):
            continue
        # Bound again in the body, or in a nested scope, it is another variable there: not one rename.
        body = [n for stmt in node.body for n in ast.walk(stmt)]
        if any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in body):
            continue
        if any(isinstance(n, ast.arg) and n.arg == name for n in body):
            continue
        if any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in body):
            continue
        uses = [n for n in body if isinstance(n, ast.Name) and n.id == name]
        if any(p.inside(n, ast.JoinedStr) for n in uses):
            continue
        if node.args.args[0].annotation is not None:
            continue
        # super() without arguments finds its class through the first parameter's cell: any name works.
        edits = [(*p.span(node.args.args[0]), new)] + [(*p.span(n), new) for n in uses]
        out.append(("self renamed", p.edited(edits), None))
    return out


def statement_line_start(p, statement):
    """Whether a statement begins its line (nothing but indentation before it): a line can go in before it."""
    before = p.lines[statement.lineno - 1].encode("utf-8")[: statement.col_offset]
    return not before.strip()


def through_local(p, line):
    """A plan or run call that is a whole statement, an assignment's value or what is returned: its receiver, or
    its last argument, assigned to a new local on a line of its own before it, and the call given the local."""
    out = []
    for node in ast.walk(p.tree):
        statements = (ast.Expr, ast.Assign, ast.Return)
        if not (isinstance(node, statements) and isinstance(node.value, ast.Call) and node.lineno == line):
            continue
        call = node.value
        if not (isinstance(call.func, ast.Attribute) and call.func.attr in ("plan", "run")):
            continue
        if not statement_line_start(p, node) or p.inside(node, ast.JoinedStr):
            continue
        indent = p.lines[line - 1][: len(p.lines[line - 1]) - len(p.lines[line - 1].lstrip())]
        start = p.starts[line - 1]
        region = (node.lineno, node.end_lineno, node.end_lineno + 1)
        last = arguments(call)[-1] if call.args or call.keywords else None
        last = last.value if isinstance(last, ast.keyword) and last.arg is not None else last
        for kind, value, local in (("receiver through a local", call.func.value, "receiver_local"),
                                   ("last argument through a local", last, "argument_local")):
            if not isinstance(value, ast.expr) or isinstance(value, ast.Starred) or re.search(rf"\b{local}\b", p.text):
                continue
            edits = [(start, start, f"{indent}{local} = {p.segment(value)}\n"), (*p.span(value), local)]
            out.append((kind, p.edited(edits), region))
    return out


def installed_methods(p):
    """The methods the module assigns on some object (`w.plan = partial(f, w)`): an instance's stand-in, which a call
    through the class passes over."""
    return {t.attr for n in ast.walk(p.tree) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Attribute)}


def attribute_chain(node):
    """Whether node is a name or attributes read on one (`self.x.y`): evaluated twice, it reads the same object."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def method_through_class(p, line):
    """A plan or run call on a receiver that is a name or an attribute chain, `r.plan(a, ...)`, called through the
    receiver's class instead, `type(r).plan(r, a, ...)`: the same method on the same instance. Where the module
    installs a stand-in for the method on an instance, the class's own method runs instead: only a plan call that
    binds by plan's own parameters (the stand-ins SGLang installs take them in the same order) is rewritten then."""
    out = []
    installed = installed_methods(p)
    for call in ast.walk(p.tree):
        if not (isinstance(call, ast.Call) and call.lineno == line and isinstance(call.func, ast.Attribute)):
            continue
        if call.func.attr not in ("plan", "run") or not attribute_chain(call.func.value):
            continue
        if p.inside(call, ast.JoinedStr):
            continue
        if call.func.attr in installed and (call.func.attr != "plan" or len(call.args) > len(PLAN_PARAMS) or any(
                isinstance(a, ast.Starred) for a in call.args) or any(k.arg not in PLAN_PARAMS for k in call.keywords)):
            continue
        receiver = p.segment(call.func.value)
        tokens = p.call_tokens(call)
        if tokens is None or "\n" in receiver:
            continue
        after_parenthesis = p.offset_of(tokens[0].end)
        first = f"{receiver}, " if call.args or call.keywords else receiver
        edits = [(*p.span(call.func), f"type({receiver}).{call.func.attr}"),
                 (after_parenthesis, after_parenthesis, first)]
        out.append(("method called through its class", p.edited(edits), None))
    return out


def assignments_joined(p, line):
    """`a = x` on line and `b = y` the next statement of the same block, each on one line of its own, as
    `a, b = x, y` on line: the same program when y does not read a (it is evaluated before a is bound then)."""
    out = []
    for node in ast.walk(p.tree):
        if not (isinstance(node, ast.Assign) and node.lineno == line == node.end_lineno):
            continue
        block = next((getattr(p.parent.get(node), f) for f in ("body", "orelse", "finalbody")
                      if node in getattr(p.parent.get(node), f, [])), None)
        if block is None or block.index(node) + 1 == len(block):
            continue
        after = block[block.index(node) + 1]
        pair = (node, after)
        if not (isinstance(after, ast.Assign) and after.lineno == after.end_lineno):
            continue
        # Next to each other, with no comment to lose (an ignore comment would then stop hiding its finding).
        if after.lineno != line + 1 or any("#" in p.lines[a.lineno - 1][a.end_col_offset :] for a in pair):
            continue
        if any(len(a.targets) != 1 or not isinstance(a.targets[0], ast.Name) or not alone_on_its_lines(p, a)
               for a in pair) or node.targets[0].id == after.targets[0].id:
            continue
        if any(isinstance(n, ast.Name) and n.id == node.targets[0].id for n in ast.walk(after.value)):
            continue
        if any(isinstance(n, ast.JoinedStr) for a in pair for n in ast.walk(a)):
            continue
        bare = (ast.Tuple, ast.Lambda, ast.IfExp, ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Starred)
        values = [f"({p.segment(a.value)})" if isinstance(a.value, bare) else p.segment(a.value) for a in pair]
        indent = p.lines[line - 1][: len(p.lines[line - 1]) - len(p.lines[line - 1].lstrip())]
        joined = f"{indent}{node.targets[0].id}, {after.targets[0].id} = {values[0]}, {values[1]}"
        lines = [*p.lines[: line - 1], joined, *p.lines[after.lineno :]]
        out.append(("assignments joined as one tuple assignment", "\n".join(lines), (line, after.lineno, line)))
    return out


def names_outside_functions(nodes):
    """The names read by code that runs when these statements run (not the bodies of the functions they define)."""
    out = set()
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            params = node.args
            every = [*params.posonlyargs, *params.args, *params.kwonlyargs, params.vararg, params.kwarg]
            stack += [*getattr(node, "decorator_list", []), *params.defaults, *filter(None, params.kw_defaults)]
            stack += [a.annotation for a in every if a is not None and a.annotation is not None]
            stack += [node.returns] if getattr(node, "returns", None) is not None else []
            continue
        if isinstance(node, ast.Name):
            out.add(node.id)
        stack += [c for c in ast.iter_child_nodes(node) if c is not None]
    return out


def definitions_swapped(p, line):
    """A definition starting on line and the next statement, also a definition, in the other order."""
    out = []
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in ast.walk(p.tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or not isinstance(node, (ast.Module, ast.ClassDef)):
            continue
        for k in range(len(body) - 1):
            a, b = body[k], body[k + 1]
            if not (isinstance(a, definitions) and isinstance(b, definitions)) or a.name == b.name:
                continue
            a1 = min([a.lineno] + [d.lineno for d in a.decorator_list])
            b1 = min([b.lineno] + [d.lineno for d in b.decorator_list])
            starts = ("@", "def", "async", "class")  # else a block would not start its line
            if a1 != line or b1 <= a.end_lineno or not p.lines[a1 - 1].strip().startswith(starts):
                continue
            if not p.lines[b1 - 1].strip().startswith(starts):
                continue
            a2, b2 = a.end_lineno, b.end_lineno
            if k + 2 < len(body) and body[k + 2].lineno <= b2:
                continue
            # What runs when the body runs may read either name: then their order matters.
            others = [n for n in body if n is not a and n is not b]
            if {a.name, b.name} & (names_outside_functions(others) | names_outside_functions([a, b])):
                continue
            lines = p.lines
            new_lines = [*lines[: a1 - 1], *lines[b1 - 1 : b2], *lines[a2 : b1 - 1], *lines[a1 - 1 : a2], *lines[b2:]]

            def moved(n, a1=a1, a2=a2, b1=b1, b2=b2):
                if a1 <= n <= a2:
                    return n + b2 - a2
                if b1 <= n <= b2:
                    return n + a1 - b1
                if a2 < n < b1:
                    return n + (b2 - b1) - (a2 - a1)
                return n

            out.append(("definitions swapped", "\n".join(new_lines), moved))
    return out


def alone_on_its_lines(p, node):
    """Whether the statement starts its line, lies outside any f-string and has nothing after it but a comment (no
    `; more`), so that it can be replaced line for line."""
    if not statement_line_start(p, node) or p.inside(node, ast.JoinedStr):
        return False
    end = p.offset(node.end_lineno, node.end_col_offset)
    rest = p.text[end : p.starts[node.end_lineno]].strip()
    return not rest or rest.startswith("#")


def conditional_as_if(p, line):
    out = []
    for node in ast.walk(p.tree):
        if not (isinstance(node, ast.Assign) and node.lineno == line and isinstance(node.value, ast.IfExp)):
            continue
        if len(node.targets) != 1 or not alone_on_its_lines(p, node):
            continue
        end = p.offset(node.end_lineno, node.end_col_offset)
        indent = p.lines[line - 1][: len(p.lines[line - 1]) - len(p.lines[line - 1].lstrip())]
        target, value = p.segment(node.targets[0]), node.value
        # Each part goes on one line: inside the parentheses its line breaks stay legal.
        block = (f"{indent}if ({p.segment(value.test)}):\n{indent}    {target} = ({p.segment(value.body)})\n"
                 f"{indent}else:\n{indent}    {target} = ({p.segment(value.orelse)})")
        start = p.starts[line - 1]
        new_text = p.text[:start] + block + p.text[end:]
        added = block.count("\n") - (node.end_lineno - node.lineno)
        out.append(("conditional as an if statement", new_text, (line, node.end_lineno, node.end_lineno + added)))
    return out


def enclosing_function(p, node):
    """The function whose local a name stored by node is, or None at module or class level (or in a lambda or a
    comprehension)."""
    function = p.parent.get(node)
    while function is not None and not isinstance(function, SCOPES):
        function = p.parent.get(function)
    return function if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def plain_local_assignment(p, node, line):
    """Whether node is `x = value` alone on its line(s) at line, x a plain local of a function, value not reading x."""
    if not (isinstance(node, ast.Assign) and node.lineno == line and len(node.targets) == 1):
        return False
    target = node.targets[0]
    if not isinstance(target, ast.Name) or enclosing_function(p, node) is None:
        return False
    if not alone_on_its_lines(p, node):
        return False
    return not any(isinstance(n, ast.Name) and n.id == target.id for n in ast.walk(node.value))


def pure(node):
    """A value whose evaluation has no effect and cannot fail once its names are bound: a constant, a name, or an
    attribute of a name (`self.x`, `torch.bfloat16`)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, (ast.Name, ast.Constant))


def as_override(p, node, kind):
    """The rewrite of `t = a if c else b` (node, alone on its lines) as `t = b` then `if c:` / `t = a`."""
    line = node.lineno
    indent = p.lines[line - 1][: len(p.lines[line - 1]) - len(p.lines[line - 1].lstrip())]
    target, value = p.segment(node.targets[0]), node.value
    block = (f"{indent}{target} = ({p.segment(value.orelse)})\n{indent}if ({p.segment(value.test)}):\n"
             f"{indent}    {target} = ({p.segment(value.body)})")
    start, end = p.starts[line - 1], p.offset(node.end_lineno, node.end_col_offset)
    added = block.count("\n") - (node.end_lineno - node.lineno)
    return kind, p.text[:start] + block + p.text[end:], (line, node.end_lineno, node.end_lineno + added)


def assignment_as_walrus(p, line):
    """`x = value` (x a plain local, alone on its lines) as the statement `(x := value)`: Python binds x to the same
    value. Left alone: a bare tuple (`(x := a, b)` is a tuple), a yield, and a conditional, which tree-sitter's grammar
    reads as `(x := a) if c else b`; kvpatch leaves such a value unfollowed (python_syntax.h, walrus_extent)."""
    out = []
    for node in ast.walk(p.tree):
        if not plain_local_assignment(p, node, line):
            continue
        value = node.value
        bare_tuple = isinstance(value, ast.Tuple) and not p.segment(value).startswith("(")
        if bare_tuple or isinstance(value, (ast.Yield, ast.YieldFrom, ast.IfExp)):
            continue
        start, end = p.span(node)
        statement = f"({node.targets[0].id} := {p.segment(value)})"
        rewritten = p.text[:start] + statement + p.text[end:]
        # The value alone may span fewer lines than the assignment did (`x = (` ... `)` loses its parentheses).
        out.append(("assignment as a := statement", rewritten, (line, node.end_lineno, line + statement.count("\n"))))
    return out


def conditional_as_override(p, line):
    """`x = a if c else b` (x a local, b pure) as `x = b` then `if c:` / `x = a`: the same value either way."""
    return [as_override(p, node, "conditional as a default and an override") for node in ast.walk(p.tree)
            if plain_local_assignment(p, node, line) and isinstance(node.value, ast.IfExp) and pure(node.value.orelse)]


def conditional_as_init_override(p, line):
    """`self.x = a if c else b` in __init__ (b pure, neither c nor a reading any `.x`) as `self.x = b` then `if c:` /
    `self.x = a`. Other methods see what __init__ leaves, the same value either way; kvpatch reads __init__ so only
    when it neither returns early nor calls its own methods, so such an __init__ is left alone."""
    out = []
    for node in ast.walk(p.tree):
        if not (isinstance(node, ast.Assign) and node.lineno == line and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        function = enclosing_function(p, node)
        if not (isinstance(value, ast.IfExp) and pure(value.orelse) and function is not None
                and function.name == "__init__" and function.args.args and isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name) and target.value.id == function.args.args[0].arg
                and alone_on_its_lines(p, node)):
            continue
        reads_x = any(isinstance(n, ast.Attribute) and n.attr == target.attr for part in (value.test, value.body)
                      for n in ast.walk(part))
        early = any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)) for n in ast.walk(function))
        own_calls = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                        and isinstance(n.func.value, ast.Name) and n.func.value.id == target.value.id
                        for n in ast.walk(function))
        if not (reads_x or early or own_calls):
            out.append(as_override(p, node, "attribute conditional as a default and an override in __init__"))
    return out


def placeholder_first(p, line):
    """`x = v` (x a local, v not reading it) preceded by `x = None` on a line of its own: v replaces it at once."""
    out = []
    for node in ast.walk(p.tree):
        if not plain_local_assignment(p, node, line):
            continue
        indent = p.lines[line - 1][: len(p.lines[line - 1]) - len(p.lines[line - 1].lstrip())]
        start = p.starts[line - 1]
        new_text = p.text[:start] + f"{indent}{node.targets[0].id} = None\n" + p.text[start:]
        out.append(("local first assigned None", new_text, lambda n, line=line: n if n < line else n + 1))
    return out


def moved_to_base(p, cls, method, kind, mixin=False):
    """The class cls with its method moved into a new base class defined just above it, which takes over the class's
    bases: [(kind, text, region)], or [] where Python might not read the result as the same program. With mixin, the
    new class has no base and comes first of the class's bases instead (`class C(Mixin, A, B)`): C3 puts it right
    after the class, so the lookup and zero-argument super() go on as they did.

    Left alone: a decorated class (a dataclass would then make its own __init__) or method, a header over several
    lines, a class with nothing else in its body, a method that names its class or __class__ or a private `__x`
    (name mangling follows the class), and for any method but __init__, a class whose body names the method outside
    its def (`run = forward`) or calls super() elsewhere (which would then reach the moved method)."""
    line = cls.lineno
    header = p.lines[line - 1]
    if cls.decorator_list or method.decorator_list or len(cls.body) < 2:
        return []
    if not header.rstrip().endswith(":") or cls.body[0].lineno == line:
        return []
    names = {n.id for n in ast.walk(method) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(method) if isinstance(n, ast.Attribute)}
    if cls.name in names or "__class__" in names or any(x.startswith("__") and not x.endswith("__") for x in names):
        return []
    if method.name != "__init__":
        rest = [n for statement in cls.body if statement is not method for n in ast.walk(statement)]
        defined = [n for n in cls.body
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == method.name]
        if len(defined) != 1 or any(isinstance(n, ast.Name) and n.id in (method.name, "super") for n in rest):
            return []
    i1, i2 = method.lineno, method.end_lineno
    base = f"_Kvpatch{'Mixin' if mixin else 'Base'}{line}_{method.name}"
    bases = header[header.index("(") + 1 : header.rindex(")")] if "(" in header else ""
    indent = header[: len(header) - len(header.lstrip())]
    if mixin:
        new_header = f"{indent}class {cls.name}({base}{', ' + bases if bases.strip() else ''}):"
        base_header = f"{indent}class {base}:"
    else:
        new_header = f"{indent}class {cls.name}({base}):"
        base_header = f"{indent}class {base}({bases}):"
    lines = p.lines
    new_lines = [*lines[: line - 1], base_header, *lines[i1 - 1 : i2], new_header,
                 *lines[line : i1 - 1], *lines[i2:]]
    n_moved = i2 - i1 + 1

    def moved(n, c1=line, i1=i1, i2=i2, n_moved=n_moved):
        if n < c1:
            return n
        if c1 <= n < i1:
            return n + 1 + n_moved
        if i1 <= n <= i2:
            return n - i1 + c1 + 1
        return n + 1

    return [(kind, "\n".join(new_lines), moved)]


def init_moved_to_base(p, line, mixin=False):
    """The class whose header is line, its __init__ moved into a new base class defined just above it.

    The instance runs the same __init__ (inherited now), and its zero-argument super() still reaches the class's
    old bases, which the new base takes over, or which follow the new class as a mixin (moved_to_base says what is
    left alone)."""
    kind = "__init__ moved into a mixin listed first" if mixin else "__init__ moved into a base class"
    out = []
    for node in ast.walk(p.tree):
        if isinstance(node, ast.ClassDef) and node.lineno == line:
            inits = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
            if len(inits) == 1:
                out += moved_to_base(p, node, inits[0], kind, mixin)
    return out


def method_moved_to_base(p, line, mixin=False):
    """The method (not __init__) whose def is on line moved into a new base class defined just above its class (or a
    mixin its class lists first): the plan and run calls then sit in a base's method, read through the instances of
    the class below it."""
    kind = "method moved into a mixin listed first" if mixin else "method moved into a base class"
    out = []
    for node in ast.walk(p.tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for method in node.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.lineno == line and (
                    method.name != "__init__"):
                out += moved_to_base(p, node, method, kind, mixin)
    return out


def module_line_after_imports(p, before):
    """The 1-based line after which a new module-level statement can go so that it runs before line `before`: the
    last line of the last import at the module's top level above `before`, or None when there is none."""
    imports = [n for n in p.tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) and n.end_lineno < before]
    return imports[-1].end_lineno if imports else None


def spans_a_string_line(p, node):
    """Whether a string token inside node runs over several lines: indenting its lines would change its value."""
    start, end = p.span(node)
    return any(t.type == tokenize.STRING and t.start[0] != t.end[0] and start <= p.offset_of(t.start) < end
               for t in p.tokens)


def with_inserted(p, after, insertion, line, new_lines, old_last):
    """The text with `insertion` (module-level lines) put after line `after`, and lines line..old_last replaced by
    new_lines, which are one new line and then those lines, and the function taking each old line to its new one."""
    lines = p.lines
    text = "\n".join([*lines[:after], *insertion, *lines[after : line - 1], *new_lines, *lines[old_last:]])
    added = len(insertion)

    def moved(n):
        return n + (added if n > after else 0) + (1 if n >= line else 0)

    return text, moved


def wrappable_statements(p, line):
    """The statements of a function body starting on line that can become the body of a compound statement as they
    are, a block deeper: not a docstring, `global`/`nonlocal`, an `elif` or a statement holding a string over several
    lines; alone on their lines."""
    for node in ast.walk(p.tree):
        if not (isinstance(node, ast.stmt) and node.lineno == line and enclosing_function(p, node) is not None):
            continue
        if isinstance(node, (ast.Global, ast.Nonlocal)) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):  # a docstring stays one
            continue
        if p.lines[line - 1].lstrip().startswith("elif"):  # ast's If of an elif clause: not a statement of a block
            continue
        if alone_on_its_lines(p, node) and not spans_a_string_line(p, node):
            yield node


def indented_body(p, line, node):
    """The statement's indentation and its lines a block deeper."""
    indent = p.lines[line - 1][: len(p.lines[line - 1]) - len(p.lines[line - 1].lstrip())]
    return indent, [("    " + x if x.strip() else x) for x in p.lines[line - 1 : node.end_lineno]]


def statement_in_with(p, line):
    """A statement of a function body that starts on line, as the body of `with contextlib.nullcontext():` (and
    `import contextlib` after the module's imports): the same program, its statements a block deeper."""
    out = []
    for node in wrappable_statements(p, line):
        after = module_line_after_imports(p, line)
        if after is None:
            continue
        indent, body = indented_body(p, line, node)
        text, moved = with_inserted(p, after, ["import contextlib"], line,
                                    [f"{indent}with contextlib.nullcontext():", *body], node.end_lineno)
        out.append(("statement in a with block", text, moved))
    return out


# What follows a statement made the body of a try, by kind: clauses that pass on every exception it raises, so that
# it runs, or the function stops with that exception, as before.
TRY_ENDINGS = {
    "statement in a try-finally": ["finally:", "    pass"],
    "statement in a try with a handler that re-raises": ["except Exception:", "    raise"],
}


def shifted(line, end, added):
    """Where each old line goes when one line goes in before `line` and `added` after `end`."""
    return lambda n: n + (1 if n >= line else 0) + (added if n > end else 0)


def statement_in_try(p, line, kind):
    """A statement of a function body that starts on line, as the body of a try whose other clauses (TRY_ENDINGS[kind])
    let every exception through: the same program."""
    out = []
    for node in wrappable_statements(p, line):
        indent, body = indented_body(p, line, node)
        ending = [indent + x for x in TRY_ENDINGS[kind]]
        text = "\n".join([*p.lines[: line - 1], f"{indent}try:", *body, *ending, *p.lines[node.end_lineno :]])
        out.append((kind, text, shifted(line, node.end_lineno, len(ending))))
    return out


def statement_in_try_finally(p, line):
    return statement_in_try(p, line, "statement in a try-finally")


def statement_in_try_reraising(p, line):
    return statement_in_try(p, line, "statement in a try with a handler that re-raises")


def if_statements(p, line):
    """The if statements of a function body that start on line (not an elif clause, which ast reads as an If in its
    parent's orelse), alone on their lines and holding no string over several lines."""
    for node in ast.walk(p.tree):
        if not (isinstance(node, ast.If) and node.lineno == line and enclosing_function(p, node) is not None):
            continue
        if p.lines[line - 1].lstrip().startswith("elif") or not alone_on_its_lines(p, node):
            continue
        if not spans_a_string_line(p, node):
            yield node


def empty_else_added(p, line):
    """An if statement with no else clause given `else: pass`: the same program."""
    out = []
    for node in if_statements(p, line):
        if node.orelse:
            continue
        indent = p.lines[line - 1][: len(p.lines[line - 1]) - len(p.lines[line - 1].lstrip())]
        end = node.end_lineno
        text = "\n".join([*p.lines[:end], f"{indent}else:", f"{indent}    pass", *p.lines[end:]])
        out.append(("if statement given an empty else", text, lambda n, end=end: n + (2 if n > end else 0)))
    return out


def elif_as_nested_if(p, line):
    """`elif c:` of an if statement written as `else:` holding `if c:`, the rest of the chain a block deeper: the same
    program."""
    out = []
    for node in if_statements(p, line):
        if len(node.orelse) != 1 or not isinstance(node.orelse[0], ast.If):
            continue
        clause = node.orelse[0].lineno
        if not p.lines[clause - 1].lstrip().startswith("elif"):
            continue
        indent = p.lines[line - 1][: len(p.lines[line - 1]) - len(p.lines[line - 1].lstrip())]
        rest = [("    " + x if x.strip() else x) for x in p.lines[clause - 1 : node.end_lineno]]
        rest[0] = indent + "    " + p.lines[clause - 1].lstrip()[len("el"):]
        text = "\n".join([*p.lines[: clause - 1], f"{indent}else:", *rest, *p.lines[node.end_lineno :]])
        out.append(("elif as an else holding an if", text, lambda n, clause=clause: n + (1 if n >= clause else 0)))
    return out


def decorated(p, line, wanted):
    """The method or class (wanted: "method decorated" or "class decorated") whose def starts on line, below any
    decorators it has, given one more decorator that returns what it is given, defined after the module's imports:
    the same program."""
    out = []
    for node in ast.walk(p.tree):
        if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.lineno == line):
            continue
        outer = p.parent.get(node)
        if isinstance(node, ast.ClassDef):
            kind = "class decorated"
        elif isinstance(outer, ast.ClassDef):
            kind = "method decorated"
        else:
            continue
        if kind != wanted or not statement_line_start(p, node) or re.search(r"\b_kvpatch_same\b", p.text):
            continue
        top = node.decorator_list[0].lineno if node.decorator_list else line
        after = module_line_after_imports(p, top)
        if after is None:
            continue
        indent = p.lines[line - 1][: len(p.lines[line - 1]) - len(p.lines[line - 1].lstrip())]
        helper = ["", "", "def _kvpatch_same(thing):", "    return thing", ""]
        text, moved = with_inserted(p, after, helper, line, [f"{indent}@_kvpatch_same", p.lines[line - 1]], line)
        out.append((kind, text, moved))
    return out


def method_decorated(p, line):
    return decorated(p, line, "method decorated")


def class_decorated(p, line):
    return decorated(p, line, "class decorated")


def own_scope(function):
    """The nodes of a function's own scope: its body, not the functions, classes, lambdas or comprehensions in it."""
    pending = list(ast.iter_child_nodes(function))
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, SCOPES):
            pending += ast.iter_child_nodes(node)


def function_locals(function):
    """The names a function binds in its own scope (parameters included), or None when it declares a name global or
    nonlocal (then what a name means there is not read here)."""
    params = function.args
    names = {a.arg for a in [*params.posonlyargs, *params.args, *params.kwonlyargs, params.vararg, params.kwarg] if a}
    for node in own_scope(function):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return None
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def locals_read(node, local, own):
    """The method's locals (not its instance, own) that node reads, in the order first read: a helper's parameters."""
    read = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in local and n.id != own and n.id not in read:
            read.append(n.id)
    return read


def plans(call):
    """Whether a call is a plan (`x.plan(...)`, `x.begin_forward(...)`) or looks like a plan alias's (`f_plan(...)`)."""
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr in ("plan", "begin_forward")) or (
        isinstance(f, ast.Name) and "plan" in f.id)


def runs(call):
    """Whether a call is a wrapper's run (`x.run(...)`)."""
    return isinstance(call.func, ast.Attribute) and call.func.attr == "run"


# The calls each helper-method rewrite moves, by kind.
HELPER_CALLS = {"plan call moved into a helper method": plans, "run call moved into a helper method": runs}


def statement_call(node):
    """The call a statement is, assigns to one name, or returns, with what the statement writes before it; or None."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return node.value, ""
    if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)):
        return node.value, node.targets[0].id + " = "
    if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
        return node.value, "return "
    return None


def statement_calls(p, line):
    """(statement, call, what the statement writes before the call, its function) for each statement of a function
    starting on line that makes, assigns or returns a call (statement_call) spanning its lines, alone on them, with no
    scope inside it and no string running over several lines: a statement that can be moved as it is written."""
    for node in ast.walk(p.tree):
        found = statement_call(node) if isinstance(node, ast.stmt) and node.lineno == line else None
        if found is None:
            continue
        call, before = found
        function = enclosing_function(p, node)
        if function is None or any(isinstance(n, SCOPES) for n in ast.walk(node)):
            continue
        if (call.lineno, call.end_lineno) != (node.lineno, node.end_lineno) or not alone_on_its_lines(p, node):
            continue
        if spans_a_string_line(p, node) or p.inside(node, ast.JoinedStr):
            continue
        yield node, call, before, function


def call_in_helper(p, line, kind):
    """A call (HELPER_CALLS[kind]) that a statement of a method starting on line makes, assigns or returns, moved into
    a new method of the class defined after that one, which takes the method's own instance and the method's locals
    the call reads as parameters and returns what the call returns; the statement calls the helper instead: the
    same program."""
    out = []
    for node, call, before, method in statement_calls(p, line):
        if not isinstance(p.parent.get(method), ast.ClassDef) or method.decorator_list:
            continue
        if not HELPER_CALLS[kind](call) or not method.args.args:
            continue
        local = function_locals(method)
        # A local bound to the method (`plan = wrapper.plan`) would be handed to the helper as a value: kvpatch rightly
        # reports the calls made through a method passed on as unknown.
        if local is None or (isinstance(call.func, ast.Name) and call.func.id in local):
            continue
        own = method.args.args[0].arg
        read = locals_read(call, local, own)
        helper = f"_kvpatch_call{line}"
        if re.search(rf"\b{helper}\b", p.text):
            continue
        first, last, end = line, node.end_lineno, method.end_lineno
        indent = p.lines[first - 1][: len(p.lines[first - 1]) - len(p.lines[first - 1].lstrip())]
        method_indent = " " * method.col_offset
        # The call's lines after its first are inside its brackets, where indentation does not count.
        segment = p.segment(call).split("\n")
        body = [f"{method_indent}    {'return ' if before else ''}{segment[0]}", *segment[1:]]
        signature = ", ".join([own, *read])
        lines = [*p.lines[: first - 1], f"{indent}{before}{own}.{helper}({', '.join(read)})", *p.lines[last:end], "",
                 f"{method_indent}def {helper}({signature}):", *body, *p.lines[end:]]
        k = last - first + 1

        def moved(n, first=first, last=last, end=end, k=k):
            if n < first:
                return n
            if n <= last:
                return end - k + 4 + (n - first)
            return n - k + 1 if n <= end else n + 3

        out.append((kind, "\n".join(lines), moved))
    return out


# The calls each nested-def rewrite moves, by kind, and whether the nested def reads the call's locals as a closure.
NESTED_CALLS = {"plan call moved into a nested def": (plans, False), "run call moved into a nested def": (runs, False),
                "plan call moved into a closure": (plans, True), "run call moved into a closure": (runs, True)}


def call_in_nested_def(p, line, kind):
    """A call (NESTED_CALLS[kind]) that a statement of a function starting on line makes, assigns or returns, moved
    into a def nested in that function just before the statement, which returns what the call returns; the statement
    calls the nested def instead. The locals the call reads are the nested def's parameters, passed under the same
    names, or for a closure read from the enclosing function as they are at the call: the same program either way."""
    selects, closure = NESTED_CALLS[kind]
    out = []
    for node, call, before, function in statement_calls(p, line):
        if not selects(call):
            continue
        # Zero-argument super() and __class__ need the method's own frame, a := would bind in the nested def, and an
        # await or a yield would change what kind of def it is.
        if any(isinstance(n, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)) or
               (isinstance(n, ast.Name) and n.id in ("super", "__class__")) for n in ast.walk(call)):
            continue
        local = function_locals(function)
        if local is None or (isinstance(call.func, ast.Name) and call.func.id in local):
            continue
        nested = f"_kvpatch_nested{line}"
        if re.search(rf"\b{nested}\b", p.text):
            continue
        method = isinstance(p.parent.get(function), ast.ClassDef) and function.args.args
        own = function.args.args[0].arg if method else None
        read = ", ".join([] if closure else locals_read(call, local, own))
        first, last = line, node.end_lineno
        indent = p.lines[first - 1][: len(p.lines[first - 1]) - len(p.lines[first - 1].lstrip())]
        # The call's lines after its first are inside its brackets, where indentation does not count.
        segment = p.segment(call).split("\n")
        body = [f"{indent}    {'return ' if before else ''}{segment[0]}", *segment[1:]]
        lines = [*p.lines[: first - 1], f"{indent}def {nested}({read}):", *body, f"{indent}{before}{nested}({read})",
                 *p.lines[last:]]

        def moved(n, first=first, last=last):
            return n if n < first else n + 1 if n <= last else n + 2

        out.append((kind, "\n".join(lines), moved))
    return out


def plan_call_in_helper(p, line):
    return call_in_helper(p, line, "plan call moved into a helper method")


def run_call_in_helper(p, line):
    return call_in_helper(p, line, "run call moved into a helper method")


def expression_in_helper(p, node, kind, prefix, findings_move=False):
    """A one-line expression of a method moved into a new method of the class defined after that one, which takes
    the locals the expression reads as parameters and returns it; the method calls the helper where the expression
    was: the same program. A list of one rewrite, or empty where the move is not that. findings_move: the findings
    on the expression's line are about the expression (a cast's), so they move to the helper's `return` line."""
    method = enclosing_function(p, node)
    if node.lineno != node.end_lineno or method is None or not isinstance(p.parent.get(method), ast.ClassDef):
        return []
    if method.decorator_list or not method.args.args or p.inside(node, ast.JoinedStr):
        return []
    if any(isinstance(n, (*SCOPES, ast.NamedExpr)) for n in ast.walk(node)):
        return []
    up = p.parent.get(node)
    while up is not method and not isinstance(up, SCOPES):
        up = p.parent.get(up)
    local = function_locals(method)
    if up is not method or local is None:
        return []  # in a lambda or comprehension, whose names are not the method's
    own = method.args.args[0].arg
    read = locals_read(node, local, own)
    helper = f"{prefix}{node.lineno}"
    if re.search(rf"\b{helper}\b", p.text):
        return []
    start, end = p.span(node)
    lines = (p.text[:start] + f"{own}.{helper}({', '.join(read)})" + p.text[end:]).split("\n")
    method_indent = " " * method.col_offset
    last = method.end_lineno
    lines = [*lines[:last], "", f"{method_indent}def {helper}({', '.join([own, *read])}):",
             f"{method_indent}    return {p.segment(node)}", *lines[last:]]

    def moved(n, last=last, line=node.lineno):
        if findings_move and n == line:
            return last + 3
        return n if n <= last else n + 3

    return [(kind, "\n".join(lines), moved)]


def expression_in_closure(p, node, kind, prefix, findings_move=False):
    """A one-line expression of a simple statement of a function moved into a def nested in the function just before
    that statement, which reads the function's locals as a closure and returns the expression; the statement calls
    the nested def where the expression was. It runs where the expression ran and sees the same values: the same
    program. A list of one rewrite, or empty where the move is not that. findings_move: as for expression_in_helper,
    the findings on the expression's line move to the nested def's `return` line."""
    statement = p.parent.get(node)
    while statement is not None and not isinstance(statement, ast.stmt):
        statement = p.parent.get(statement)
    simple = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)
    function = enclosing_function(p, node)
    if node.lineno != node.end_lineno or not isinstance(statement, simple) or function is None:
        return []
    if not alone_on_its_lines(p, statement) or spans_a_string_line(p, statement):
        return []
    up = p.parent.get(node)
    while up is not function and not isinstance(up, SCOPES):
        up = p.parent.get(up)
    # Names of comprehensions and lambdas are not the function's; super() and __class__ need its own frame; a := binds
    # in the nested def; an await or a yield changes what kind of def it is.
    if up is not function or any(
            isinstance(n, (*SCOPES, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)) or
            (isinstance(n, ast.Name) and n.id in ("super", "__class__")) for n in ast.walk(node)):
        return []
    nested = f"{prefix}{node.lineno}"
    if re.search(rf"\b{nested}\b", p.text):
        return []
    first = statement.lineno
    indent = p.lines[first - 1][: len(p.lines[first - 1]) - len(p.lines[first - 1].lstrip())]
    start, end = p.span(node)
    replaced = (p.text[:start] + f"{nested}()" + p.text[end:]).split("\n")
    lines = [*replaced[: first - 1], f"{indent}def {nested}():", f"{indent}    return {p.segment(node)}",
             *replaced[first - 1 :]]

    def moved(n, first=first, line=node.lineno):
        if findings_move and n == line:
            return first + 1
        return n if n < first else n + 2

    return [(kind, "\n".join(lines), moved)]


def kv_read_in_helper(p, line):
    """A one-line read of the KV cache (`<pool>.get_key_buffer(...)`, the rule's KV source) on line moved into a
    helper method that returns it (expression_in_helper)."""
    out = []
    for node in ast.walk(p.tree):
        if (isinstance(node, ast.Call) and node.lineno == line and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get_key_buffer"):
            out += expression_in_helper(p, node, "KV read moved into a helper method", "_kvpatch_kv")
            out += expression_in_closure(p, node, "KV read moved into a closure", "_kvpatch_kv")
    return out


def kv_read_through_kv_buffer(p, line):
    """Each `<pool>.get_key_buffer(args)` starting on line read as `<pool>.get_kv_buffer(args)[0]`, and where it is
    the whole value of `x = ...`, as `x, _kvpatch_v = <pool>.get_kv_buffer(args)`: SGLang's MLA pools return the key
    buffer first from get_kv_buffer (and the value buffer, a view of its latent part, second)."""
    out = []
    for node in ast.walk(p.tree):
        if not (isinstance(node, ast.Call) and node.lineno == line and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get_key_buffer"):
            continue
        name_end = p.span(node.func)[1]
        renamed = (name_end - len("get_key_buffer"), name_end, "get_kv_buffer")
        call_end = p.span(node)[1]
        out.append(("KV read through get_kv_buffer", p.edited([renamed, (call_end, call_end, "[0]")]), None))
        statement = p.parent.get(node)
        if (isinstance(statement, ast.Assign) and statement.value is node and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)):
            target_end = p.span(statement.targets[0])[1]
            out.append(("KV read through get_kv_buffer",
                        p.edited([(target_end, target_end, ", _kvpatch_v"), renamed]), None))
    return out


def kv_cast_in_helper(p, line):
    """A one-line `.to(<x>.dtype)` of a method starting on line (the cast rule's form; the rule decides whether its
    value is the KV cache's) moved into a helper method that returns it (expression_in_helper)."""
    out = []
    for node in rule_casts(p, line):
        out += expression_in_helper(p, node, "cast moved into a helper method", "_kvpatch_cast", findings_move=True)
        out += expression_in_closure(p, node, "cast moved into a closure", "_kvpatch_cast", findings_move=True)
    return out


CAST_DTYPE_LOCAL = "cast_dtype_local"  # the local cast_dtype_through_local adds


def cast_dtype_through_local(p, line):
    """A `.to(<x>.dtype)` (x a name or an attribute of one) in a simple statement of a function starting on line: the
    dtype assigned to a new local on a line of its own before the statement, and the cast given the local. Left alone:
    a cast in a lambda or a comprehension, where x may be bound only inside."""
    out = []
    local = CAST_DTYPE_LOCAL
    if re.search(rf"\b{local}\b", p.text):
        return out
    simple = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)
    for statement in ast.walk(p.tree):
        if not (isinstance(statement, simple) and statement.lineno == line and statement_line_start(p, statement)):
            continue
        if enclosing_function(p, statement) is None or p.inside(statement, ast.JoinedStr):
            continue
        for node in ast.walk(statement):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to"
                    and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Attribute)
                    and node.args[0].attr == "dtype" and pure(node.args[0])):
                continue
            if p.inside(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.JoinedStr)):
                continue
            indent = p.lines[line - 1][: len(p.lines[line - 1]) - len(p.lines[line - 1].lstrip())]
            start = p.starts[line - 1]
            edits = [(start, start, f"{indent}{local} = {p.segment(node.args[0])}\n"), (*p.span(node.args[0]), local)]
            out.append(("cast's dtype through a local", p.edited(edits),
                        (statement.lineno, statement.end_lineno, statement.end_lineno + 1)))
    return out


def casts_share_dtype_local(p, line):
    """The `.to(<x>.dtype)` casts (x a name) of a simple statement of a function starting on line, and of the simple
    statements after it in its block up to the first that binds x (or is no simple statement), given one new local
    `<x>.dtype` assigned on a line of its own before the first: the same program, made only where two or more casts
    read the local. Left alone: casts in lambdas, comprehensions and f-strings, where x may be bound only inside."""
    out = []
    local = CAST_DTYPE_LOCAL
    if re.search(rf"\b{local}\b", p.text):
        return out
    simple = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)

    def casts_of(statement, name=None):
        return [n for n in ast.walk(statement)
                if is_rule_cast(p, n) and isinstance(n.args[0].value, ast.Name) and name in (None, n.args[0].value.id)]

    def binds(statement, name):
        return any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
                   for n in ast.walk(statement))

    for first in ast.walk(p.tree):
        if not (isinstance(first, simple) and first.lineno == line and statement_line_start(p, first)):
            continue
        if enclosing_function(p, first) is None:
            continue
        block = next((b for b in (getattr(p.parent.get(first), f, None) for f in ("body", "orelse", "finalbody"))
                      if isinstance(b, list) and any(s is first for s in b)), None)
        if block is None:
            continue
        names = sorted({c.args[0].value.id for c in casts_of(first)})
        for name in names:
            casts = []
            for statement in block[next(i for i, s in enumerate(block) if s is first):]:
                if not isinstance(statement, simple):
                    break
                casts += casts_of(statement, name)
                if binds(statement, name):
                    break
            if len(casts) < 2:
                continue
            indent = p.lines[line - 1][: len(p.lines[line - 1]) - len(p.lines[line - 1].lstrip())]
            start = p.starts[line - 1]
            edits = [(start, start, f"{indent}{local} = {name}.dtype\n")]
            edits += [(*p.span(c.args[0]), local) for c in casts]
            out.append(("one dtype local for a block's casts", p.edited(edits),
                        lambda n, at=line: n + 1 if n >= at else n))
    return out


def is_rule_cast(p, node):
    """A `.to(<x>.dtype)` call (one positional argument, no keyword; the cast rule's own form) outside lambdas,
    comprehensions and f-strings, where a rewrite could change which names the argument sees."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to"
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Attribute)
            and node.args[0].attr == "dtype"
            and not p.inside(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                                    ast.JoinedStr)))


def rule_casts(p, line):
    """The rule's casts (is_rule_cast) starting on line."""
    return [node for node in ast.walk(p.tree) if isinstance(node, ast.Call) and node.lineno == line
            and is_rule_cast(p, node)]


def cast_dtype_as_keyword(p, line):
    """A `.to(<x>.dtype)` starting on line as `.to(dtype=<x>.dtype)`: torch.Tensor.to binds its dtype either way."""
    out = []
    for node in rule_casts(p, line):
        start = p.span(node.args[0])[0]
        out.append(("cast's dtype as a keyword", p.edited([(start, start, "dtype=")]), None))
    return out


def cast_through_dtype_parameter(p, line):
    """A one-line `<v>.to(<x>.dtype)` of a method starting on line as `<self>._kvpatch_to<line>(<v>, <x>.dtype)`, a
    new method of the class defined after that one returning `value.to(dtype)`: the same program (v and x evaluated
    in the method, in the same order). The cast's findings move to the helper's `return` line."""
    out = []
    for node in rule_casts(p, line):
        method = enclosing_function(p, node)
        if node.lineno != node.end_lineno or method is None or not isinstance(p.parent.get(method), ast.ClassDef):
            continue
        if method.decorator_list or not method.args.args or any(isinstance(n, ast.NamedExpr) for n in ast.walk(node)):
            continue
        own = method.args.args[0].arg
        helper = f"_kvpatch_to{node.lineno}"
        if re.search(rf"\b{helper}\b", p.text) or own in {"value", "dtype"}:
            continue
        start, end = p.span(node)
        call = f"{own}.{helper}({p.segment(node.func.value)}, {p.segment(node.args[0])})"
        lines = (p.text[:start] + call + p.text[end:]).split("\n")
        indent = " " * method.col_offset
        last = method.end_lineno
        lines = [*lines[:last], "", f"{indent}def {helper}({own}, value, dtype):",
                 f"{indent}    return value.to(dtype)", *lines[last:]]

        def moved(n, last=last, line=node.lineno):
            if n == line:
                return last + 3
            return n if n <= last else n + 3

        out.append(("cast through a helper's dtype parameter", "\n".join(lines), moved))
    return out


TWIN_LOCAL = "kvpatch_twin"  # the local local_with_twin adds


def fixable_call(callee):
    """Whether a call of this callee is one a fix may edit: a cast (`.to`), or plan or run, through an alias too."""
    if isinstance(callee, ast.Attribute):
        return callee.attr in ("to", "plan", "run")
    return isinstance(callee, ast.Name) and callee.id in ("plan", "run")


def local_with_twin(p, line):
    """`x = v`, a statement of its own in a function starting on line, x a name and v holding no `.to`, plan or run
    call (which a fix may edit, through an alias too): v
    also bound to a new local that nothing reads, `x = kvpatch_twin = v`. A fix may rewrite or remove a statement
    that binds the one local it changes; this one binds two, so whatever kvpatch does, the twin must keep v
    (metamorphic_test.py checks the text apply writes)."""
    if re.search(rf"\b{TWIN_LOCAL}\b", p.text):
        return []
    out = []
    for statement in ast.walk(p.tree):
        if not (isinstance(statement, ast.Assign) and statement.lineno == line and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name) and statement_line_start(p, statement)):
            continue
        if enclosing_function(p, statement) is None or p.inside(statement, ast.JoinedStr):
            continue
        if any(isinstance(n, ast.Call) and fixable_call(n.func) for n in ast.walk(statement.value)):
            continue
        at = p.span(statement.targets[0])[1]
        out.append(("a local bound with a twin", p.edited([(at, at, f" = {TWIN_LOCAL}")]), None))
    return out


def plan_dtype_in_helper(p, line):
    """The KV dtype a `w.plan(...)` starting on line passes (its kv_data_type keyword, or the last of its twelve
    positional arguments) moved into a helper method that returns it (expression_in_helper)."""
    out = []
    for node in ast.walk(p.tree):
        if not (isinstance(node, ast.Call) and node.lineno == line and isinstance(node.func, ast.Attribute)
                and node.func.attr == "plan"):
            continue
        value = next((k.value for k in node.keywords if k.arg == "kv_data_type"), None)
        if value is None and len(node.args) == len(PLAN_PARAMS) and not node.keywords:
            value = node.args[-1]
        if value is not None and not isinstance(value, ast.Starred):
            out += expression_in_helper(p, value, "plan's KV dtype moved into a helper method", "_kvpatch_dtype")
    return out


def plan_dtypes_from_helper(p, line):
    """A `w.plan(...)` statement starting on line whose query and KV dtypes (its q_data_type and kv_data_type
    keywords, or the last two of its twelve positional arguments) are pure one-line values: both moved into a method of
    the class that returns them as a tuple, unpacked into two new locals on the line before the statement."""
    out = []
    for node in ast.walk(p.tree):
        if not (isinstance(node, ast.Call) and node.lineno == line and isinstance(node.func, ast.Attribute)
                and node.func.attr == "plan"):
            continue
        statement = p.parent.get(node)
        if statement is None or statement_call(statement) is None or statement.lineno != line:
            continue
        by_name = {k.arg: k.value for k in node.keywords}
        if "q_data_type" in by_name and "kv_data_type" in by_name:
            values = [by_name["q_data_type"], by_name["kv_data_type"]]
        elif len(node.args) == len(PLAN_PARAMS) and not node.keywords:
            values = node.args[-2:]
        else:
            continue
        method = enclosing_function(p, node)
        if method is None or not isinstance(p.parent.get(method), ast.ClassDef) or method.decorator_list:
            continue
        local = function_locals(method)
        if not method.args.args or local is None or not all(pure(v) and v.lineno == v.end_lineno for v in values):
            continue
        own = method.args.args[0].arg
        read = locals_read(values[0], local, own)
        read += [n for n in locals_read(values[1], local, own) if n not in read]
        helper, names = f"_kvpatch_dtypes{line}", [f"_kvpatch_q{line}", f"_kvpatch_kv{line}"]
        if any(re.search(rf"\b{n}\b", p.text) for n in [helper, *names]):
            continue
        text = p.edited([(*p.span(v), n) for v, n in zip(values, names)])
        lines = text.split("\n")
        indent = " " * statement.col_offset
        method_indent = " " * method.col_offset
        last = method.end_lineno
        helper_lines = ["", f"{method_indent}def {helper}({', '.join([own, *read])}):",
                        f"{method_indent}    return {p.segment(values[0])}, {p.segment(values[1])}"]
        lines = [*lines[: line - 1], f"{indent}{names[0]}, {names[1]} = {own}.{helper}({', '.join(read)})",
                 *lines[line - 1 : last], *helper_lines, *lines[last:]]

        def moved(n, line=line, last=last):
            return n if n < line else n + 1 if n <= last else n + 4

        out.append(("plan's dtypes unpacked from a helper method", "\n".join(lines), moved))
    return out


def rewrites_at(p, line):
    """Every rewrite of the calls that start on 1-based line, its strings, and the locals it assigns."""
    out = []
    for node in ast.walk(p.tree):
        if isinstance(node, ast.Call) and node.lineno == line and not p.inside(node, ast.JoinedStr):
            out += keywords_reordered(p, node) + positionals_by_keyword(p, node)
            out += split_call(p, node) + joined_call(p, node)
    out += quotes_swapped(p, line) + local_renamed(p, line) + import_renamed(p, line) + self_renamed(p, line)
    out += import_as_module(p, line)
    out += through_local(p, line) + definitions_swapped(p, line) + conditional_as_if(p, line)
    out += assignments_joined(p, line) + assignment_as_walrus(p, line)
    out += conditional_as_override(p, line) + conditional_as_init_override(p, line) + placeholder_first(p, line)
    out += init_moved_to_base(p, line) + method_moved_to_base(p, line)
    out += init_moved_to_base(p, line, mixin=True) + method_moved_to_base(p, line, mixin=True)
    out += statement_in_try_finally(p, line) + statement_in_try_reraising(p, line) + plan_call_in_helper(p, line)
    out += run_call_in_helper(p, line) + kv_read_in_helper(p, line) + plan_dtype_in_helper(p, line)
    out += [r for kind in NESTED_CALLS for r in call_in_nested_def(p, line, kind)]
    out += kv_cast_in_helper(p, line) + kv_read_through_kv_buffer(p, line) + plan_dtypes_from_helper(p, line)
    out += cast_dtype_through_local(p, line) + cast_dtype_as_keyword(p, line) + cast_through_dtype_parameter(p, line)
    out += local_with_twin(p, line) + empty_else_added(p, line) + elif_as_nested_if(p, line)
    out += method_through_class(p, line)
    return out + statement_in_with(p, line) + method_decorated(p, line) + class_decorated(p, line)


# The rewrites made by one function each, by kind: metamorphic_test.py's --kind calls it alone (rewrites_at makes
# every kind, walking the tree once per kind, which over a long backend's every line takes minutes).
BY_KIND = {
    "__init__ moved into a base class": init_moved_to_base,
    "assignments joined as one tuple assignment": assignments_joined,
    "assignment as a := statement": assignment_as_walrus,
    "import as a module": import_as_module,
    "method moved into a base class": method_moved_to_base,
    "__init__ moved into a mixin listed first": lambda p, line: init_moved_to_base(p, line, mixin=True),
    "method moved into a mixin listed first": lambda p, line: method_moved_to_base(p, line, mixin=True),
    "attribute conditional as a default and an override in __init__": conditional_as_init_override,
    "conditional as a default and an override": conditional_as_override,
    "conditional as an if statement": conditional_as_if,
    "local first assigned None": placeholder_first,
    "definitions swapped": definitions_swapped,
    "statement in a with block": statement_in_with,
    "statement in a try-finally": statement_in_try_finally,
    "statement in a try with a handler that re-raises": statement_in_try_reraising,
    "plan call moved into a helper method": plan_call_in_helper,
    "run call moved into a helper method": run_call_in_helper,
    **{kind: lambda p, line, kind=kind: call_in_nested_def(p, line, kind) for kind in NESTED_CALLS},
    "KV read moved into a helper method": kv_read_in_helper,
    "KV read moved into a closure": kv_read_in_helper,
    "plan's KV dtype moved into a helper method": plan_dtype_in_helper,
    "cast moved into a helper method": kv_cast_in_helper,
    "cast moved into a closure": kv_cast_in_helper,
    "cast's dtype through a local": cast_dtype_through_local,
    "one dtype local for a block's casts": casts_share_dtype_local,
    "cast's dtype as a keyword": cast_dtype_as_keyword,
    "cast through a helper's dtype parameter": cast_through_dtype_parameter,
    "KV read through get_kv_buffer": kv_read_through_kv_buffer,
    "plan's dtypes unpacked from a helper method": plan_dtypes_from_helper,
    "a local bound with a twin": local_with_twin,
    "if statement given an empty else": empty_else_added,
    "elif as an else holding an if": elif_as_nested_if,
    "method decorated": method_decorated,
    "method called through its class": method_through_class,
    "class decorated": class_decorated,
}
