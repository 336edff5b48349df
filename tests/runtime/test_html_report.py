"""The HTML report (`Compiled.save_report`) and the fused graph (runtime/graphviz.py): the page's
structure and the roofline chart's geometry read back from the file, and the page rendered by a
real headless Chromium where Debian's `chromium` is installed."""
import html
import json
import math
import os
import re
import subprocess
from html.parser import HTMLParser

import numpy as np

import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.ir.targets import get_target
from cdnajit.runtime import graphviz
from cdnajit.runtime.html_report import compute_roofs

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


def softmax(x):
    e = cnp.exp(x - cnp.max(x, axis=-1, keepdims=True))
    return e / cnp.sum(e, axis=-1, keepdims=True)


def mlp(x, w):
    """Three kernels: a compute-bound matrix product from the BLAS library (256x512 @ 512x256: 51 FLOP/B against the f32
    ridge of 163.4 / 5.3 = 31), a memory-bound softmax, and a transpose without FLOPs."""
    return softmax(x @ w), w.T


@pytest.fixture(scope="module")
def program():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 512)).astype(np.float32)
    w = rng.standard_normal((512, 256)).astype(np.float32)
    return cj.jit(mlp).lower(x, w).compile()


@pytest.fixture(scope="module")
def page(program, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    program.save_report(path)
    return path


class Elements(HTMLParser):
    """Every start tag of a page as (tag, attributes, classes of the enclosing elements)."""
    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "path", "line", "rect", "circle", "stop"}

    def __init__(self, text):
        super().__init__()
        self.elements, self.stack = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        enclosing = {c for _, cls in self.stack for c in cls}
        self.elements.append((tag, attrs, enclosing))
        if tag not in self.VOID:
            self.stack.append((tag, (attrs.get("class") or "").split()))

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), {c for _, cls in self.stack for c in cls}))

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def find(self, tag, within=None, cls=None):
        """The attributes of each `tag` inside an element of class `within` and of class `cls`."""
        return [attrs for t, attrs, enclosing in self.elements
                if t == tag and (within is None or within in enclosing)
                and (cls is None or cls in (attrs.get("class") or "").split())]


def test_page_is_self_contained(page):
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>")
    # The only URL is the SVG namespace name (an identifier, never fetched); no scripts or links.
    assert set(re.findall(r"https?://[^\"' ]+", text)) == {"http://www.w3.org/2000/svg"}
    assert not re.search(r"<(script|link|img|iframe)\b|\bsrc=|@import|url\((?!#)", text)


def test_kernel_table(page, program):
    elements = Elements(page.read_text())
    rows = elements.find("tr", within="kernels")
    assert len(rows) == 1 + len(program.kernels)   # the header, then one row per kernel
    text = page.read_text()
    for report in program.kernels:
        assert f"<td>{report.name}</td><td>{report.kind}</td>" in text


def test_fused_graph_svg(page, program):
    elements = Elements(page.read_text())
    graph = program.program_report("kernels").fused_graph()
    assert len(elements.find("g", cls="node")) == graph.number_of_nodes() == 2 + 3 + 2  # args, kernels, outputs
    assert len(elements.find("path", within="edge")) == graph.number_of_edges()
    assert len(elements.find("g", cls="fused")) == 2 and len(elements.find("g", cls="library")) == 1


def test_fused_graph_layout_is_layered():
    module = cj.make_graph(mlp)(np.zeros((4, 8), np.float32), np.zeros((8, 4), np.float32))
    graph = graphviz.module_graph(module, {})
    boxes, width, height = graphviz.layout(graph)
    for source, target in graph.edges:   # every edge runs down from one layer to a later one
        assert boxes[source][1] + boxes[source][3] < boxes[target][1]
    for a in boxes:                       # no two boxes overlap, all inside the drawing
        x, y, w, h = boxes[a]
        assert 0 <= x and x + w <= width and 0 <= y and y + h <= height
        for b in boxes:
            if a < b:
                bx, by, bw, bh = boxes[b]
                assert x + w <= bx or bx + bw <= x or y + h <= by or by + bh <= y, (a, b)


def test_dot_text():
    module = cj.make_graph(softmax)(np.zeros((4, 64), np.float32))
    graph = graphviz.module_graph(module, {})
    dot = graphviz.to_dot(graph, 'a "quoted" name')
    assert dot.startswith('digraph "a \\"quoted\\" name" {\n')
    assert 'arg0 [label="arg 0\\nf32[4,64]"' in dot and 'label="f32[4,64]"' in dot
    assert dot.count(" -> ") == graph.number_of_edges() and dot.rstrip().endswith("}")


def point_of(circle):
    return float(circle["cx"]), float(circle["cy"])


def test_roofline_chart_geometry(page, program):
    elements = Elements(page.read_text())
    target = get_target("gfx942")
    assert len(elements.find("line", cls="compute-roof")) == len(compute_roofs(target)) == 4
    memory, = elements.find("line", cls="memory-roof")
    x1, y1, x2, y2 = (float(memory[k]) for k in ("x1", "y1", "x2", "y2"))
    # log-log: the memory roof FLOP/s = bandwidth x intensity has slope 1 in decades, so its pixel
    # slope is (pixels per y decade) / (pixels per x decade).
    ticks_x = sorted({float(a["x1"]) for a in elements.find("line", within="roofline") if a.get("x1") == a.get("x2")
                      and "class" not in a})
    ticks_y = sorted({float(a["y1"]) for a in elements.find("line", within="roofline") if a.get("y1") == a.get("y2")
                      and "class" not in a})
    per_x, per_y = ticks_x[1] - ticks_x[0], ticks_y[1] - ticks_y[0]
    assert (y1 - y2) / (x2 - x1) == pytest.approx(per_y / per_x, rel=1e-3)
    circles = elements.find("circle", within="kernel-point")
    reports = [r for r in program.kernels if r.flops > 0]
    assert len(circles) == len(reports) == 2
    # The roofs from the lowest (largest y): 81.7 T (f64 vector), then 163.4 T (f32 vector, ...).
    f32_vector_y = sorted((float(line["y1"]) for line in elements.find("line", cls="compute-roof")), reverse=True)[1]
    assert [r.bound for r in reports] == ["compute", "memory"]
    for circle, report in zip(circles, reports):
        cx, cy = point_of(circle)
        # Below its roof by the model's efficiency: log10(1 / efficiency) decades of per_y pixels.
        below = -math.log10(report.efficiency) * per_y
        if report.bound == "memory":   # under the memory roof
            assert cy == pytest.approx(y1 + (cx - x1) * (y2 - y1) / (x2 - x1) + below, abs=0.2)
        else:                          # under the f32 roof (matrix and vector f32 peaks are equal on gfx942)
            assert cy == pytest.approx(f32_vector_y + below, abs=0.2)
    text = page.read_text()
    assert "Not on the chart (no FLOPs or no DRAM bytes): mlp_2" in text


PROBE = """<script>
const box = e => e.getBoundingClientRect();
const table = document.querySelector("table.kernels"), chart = document.querySelector("svg.roofline");
const graph = document.querySelector("svg.fused-graph"), area = box(chart);
const points = [...chart.querySelectorAll("g.kernel-point circle")].map(box);
const result = {
  rows: table.tBodies[0].rows.length, tableHeight: box(table).height, tableWidth: box(table).width,
  chartWidth: area.width, chartHeight: area.height, points: points.length,
  pointsInside: points.every(p => p.width > 0 && p.left >= area.left && p.right <= area.right
                                  && p.top >= area.top && p.bottom <= area.bottom),
  labels: [...chart.querySelectorAll("g.kernel-point text")].map(t => t.getComputedTextLength()),
  roofs: chart.querySelectorAll("line.compute-roof").length,
  graphNodes: [...graph.querySelectorAll("g.node rect")].filter(r => box(r).width > 0).length,
};
const out = document.createElement("pre");
out.id = "probe";
out.textContent = JSON.stringify(result);
document.body.appendChild(out);
</script>"""


@pytest.mark.skipif(not os.path.exists(CHROMIUM),
                    reason=f"no headless browser: this check runs Debian's chromium at {CHROMIUM} "
                           "(apt-get install chromium); the test installs nothing")
def test_page_renders_in_headless_chromium(page, program, tmp_path):
    # The test adds its own measuring script to a copy of the page (the report has none) and reads
    # the measures back from the DOM Chromium dumps after layout.
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    result = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                             probe.as_uri()], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout, re.S)
    assert found, result.stdout[-2000:]
    measures = json.loads(html.unescape(found.group(1)))
    assert measures["rows"] == len(program.kernels) and measures["tableHeight"] > 20 * len(program.kernels)
    assert measures["tableWidth"] > 400
    assert measures["chartWidth"] > 500 and measures["chartHeight"] > 300
    assert measures["points"] == 2 and measures["pointsInside"]
    assert all(length > 0 for length in measures["labels"])
    assert measures["roofs"] == 4 and measures["graphNodes"] == 7
