"""The fused graph of a compiled program: as a networkx graph, as Graphviz DOT text, and drawn as SVG.

    graph = module_graph(optimized_module, kernels)   # kernels: id(op) -> KernelLabel
    to_dot(graph, "softmax")                          # for `dot -Tsvg` (written to the dumps)
    to_svg(graph)                                     # an <svg> element, laid out here (no graphviz needed)

Nodes are the module's parameters, the ops the schedule runs (runtime/executable.py's
`schedule_ops`: top-level ops, and the ops of host loops and branches after their op) and the
outputs; an edge carries a value from the node that makes it (an op, a parameter, or the host op
whose region receives it) to each op that reads it, labelled with its type. Each node has a `kind`
(KIND_COLORS) and the lines of its `label`.

The SVG layout is layered: the layers are networkx's topological generations, top to bottom; each
layer is ordered once by the mean position of its nodes' predecessors (the barycenter heuristic)
to keep edges short, then centered. Edges are curves from a node's bottom to the next one's top.
"""
from __future__ import annotations

from dataclasses import dataclass
from html import escape

import networkx as nx

from ..ir.core import Module
from .executable import schedule_ops

# Fill colour of each node kind (the kinds of runtime/report.py's kernels, then the others).
KIND_COLORS = {"fused": "#cfe2ff", "library": "#d1e7dd", "generated": "#fff3cd", "host": "#e2e3e5",
               "constant": "#f8f9fa", "view": "#f8f9fa", "parameter": "#ffffff", "output": "#ffffff"}
HOST_NODE_KINDS = {"constant": "constant", "reshape": "view"}

CHAR_WIDTH, LINE_HEIGHT, FONT_SIZE = 7.2, 15, 12     # monospace 12px text
PAD, NODE_GAP, LAYER_GAP, MARGIN = 8, 24, 44, 16


@dataclass(frozen=True)
class KernelLabel:
    name: str        # the kernel's name, e.g. softmax_0
    kind: str        # fused, library or generated
    ops: str         # a summary of the graph ops it computes


def module_graph(module: Module, kernels: dict[int, KernelLabel]) -> nx.DiGraph:
    """The module as a graph; `kernels` labels each kernel op (by `id(op)`)."""
    graph = nx.DiGraph()
    producer: dict[int, str] = {}
    for i, param in enumerate(module.params):
        node = f"arg{i}"
        graph.add_node(node, kind="parameter", label=[f"arg {i}", str(param.type)])
        producer[id(param)] = node
    for n, op in enumerate(schedule_ops(module.body)):
        node = f"op{n}"
        kernel = kernels.get(id(op))
        if kernel is not None:
            what = [f"fusion ({op.attrs['kind']})", kernel.ops] if op.name == "fusion" else [kernel.ops]
            graph.add_node(node, kind=kernel.kind, label=[kernel.name, *what])
        else:
            graph.add_node(node, kind=HOST_NODE_KINDS.get(op.name, "host"), label=[op.name])
        for value in op.operands:
            if id(value) in producer:
                graph.add_edge(producer[id(value)], node, label=str(value.type))
        for value in op.results:
            producer[id(value)] = node
        for region in op.regions:   # a host loop's or branch's region receives its values from it
            for param in region.params:
                producer.setdefault(id(param), node)
    for i, value in enumerate(module.body.outputs):
        node = f"out{i}"
        graph.add_node(node, kind="output", label=[f"output {i}", str(value.type)])
        if id(value) in producer:
            graph.add_edge(producer[id(value)], node, label=str(value.type))
    return graph


def dot_quote(text: str) -> str:
    """A DOT string: quotes and backslashes escaped, newlines as DOT's centered line breaks."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: nx.DiGraph, name: str) -> str:
    """Graphviz DOT text of a `module_graph`."""
    lines = [f"digraph {dot_quote(name)} {{", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fontname="monospace", fontsize=10];',
             '  edge [fontname="monospace", fontsize=8];']
    for node, data in graph.nodes(data=True):
        label = dot_quote("\n".join(data["label"]))
        lines.append(f'  {node} [label={label}, fillcolor="{KIND_COLORS[data["kind"]]}", '
                     f'tooltip={dot_quote(data["kind"])}];')
    for source, target, data in graph.edges(data=True):
        lines.append(f"  {source} -> {target} [label={dot_quote(data['label'])}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---- SVG ---------------------------------------------------------------------------------------

def node_size(data) -> tuple[float, float]:
    width = max(len(line) for line in data["label"]) * CHAR_WIDTH + 2 * PAD
    return width, len(data["label"]) * LINE_HEIGHT + PAD


def layout(graph: nx.DiGraph) -> tuple[dict[str, tuple[float, float, float, float]], float, float]:
    """(node -> (x, y, width, height) of its box, total width, total height)."""
    layers = [list(layer) for layer in nx.topological_generations(graph)]
    order: dict[str, float] = {}
    for layer in layers:
        for node in layer:   # barycenter of the predecessors' places; sources keep their order
            preds = [order[p] for p in graph.predecessors(node)]
            order[node] = sum(preds) / len(preds) if preds else len(order)
        layer.sort(key=order.get)
        for place, node in enumerate(layer):
            order[node] = place
    sizes = {node: node_size(data) for node, data in graph.nodes(data=True)}
    layer_widths = [sum(sizes[n][0] for n in layer) + NODE_GAP * (len(layer) - 1) for layer in layers]
    total_width = max(layer_widths, default=0) + 2 * MARGIN
    boxes, y = {}, MARGIN
    for layer, layer_width in zip(layers, layer_widths):
        x = (total_width - layer_width) / 2
        height = max(sizes[n][1] for n in layer)
        for node in layer:
            width, node_height = sizes[node]
            boxes[node] = (x, y + (height - node_height) / 2, width, node_height)
            x += width + NODE_GAP
        y += height + LAYER_GAP
    return boxes, total_width, y - LAYER_GAP + MARGIN


def to_svg(graph: nx.DiGraph) -> str:
    """An <svg> element drawing a `module_graph` (inline styles, no external resources)."""
    boxes, width, height = layout(graph)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="fused-graph" width="{width:.0f}" '
             f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" font-family="monospace" '
             f'font-size="{FONT_SIZE}">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>']
    for source, target, data in graph.edges(data=True):
        sx, sy, sw, sh = boxes[source]
        tx, ty, tw, _ = boxes[target]
        x1, y1, x2, y2 = sx + sw / 2, sy + sh, tx + tw / 2, ty
        bend = (y2 - y1) / 2
        parts.append(f'<g class="edge"><title>{escape(data["label"])}</title>'
                     f'<path d="M {x1:.1f} {y1:.1f} C {x1:.1f} {y1 + bend:.1f}, {x2:.1f} {y2 - bend:.1f}, '
                     f'{x2:.1f} {y2:.1f}" fill="none" stroke="#555" marker-end="url(#arrow)"/>'
                     f'<text x="{(x1 + x2) / 2 + 4:.1f}" y="{(y1 + y2) / 2 + 4:.1f}" font-size="9" '
                     f'fill="#666">{escape(data["label"])}</text></g>')
    for node, data in graph.nodes(data=True):
        x, y, w, h = boxes[node]
        first, *rest = data["label"]   # the first line (the kernel's or op's name) in bold
        lines = f'<tspan x="{x + PAD:.1f}" dy="{FONT_SIZE + PAD / 2:.1f}" font-weight="bold">{escape(first)}</tspan>'
        lines += "".join(f'<tspan x="{x + PAD:.1f}" dy="{LINE_HEIGHT}">{escape(line)}</tspan>' for line in rest)
        parts.append(f'<g class="node {data["kind"]}"><title>{escape(data["kind"])}</title>'
                     f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="5" '
                     f'fill="{KIND_COLORS[data["kind"]]}" stroke="#333"/>'
                     f'<text y="{y:.1f}">{lines}</text></g>')
    parts.append("</svg>")
    return "\n".join(parts)
