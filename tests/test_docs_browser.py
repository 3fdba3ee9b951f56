"""The built site in a real browser: headless Chromium opens the front page, the API page and
the algorithm page with every network name unresolvable, and reads back the rendered DOM.

Skipped where no Chromium is installed (Debian: ``apt-get install chromium``). A probe script
added to a copy of each page waits for MathJax to finish and records how many formulas it
typeset (when the page has MathJax), how many are still raw TeX, and how many formulas or
tables are wider than their box (cut off at the right edge).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)"),
              pytest.mark.slow]  # builds the site (shared with tests/test_api_docs.py) and opens a browser

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--host-resolver-rules=MAP * ~NOTFOUND",  # no host name resolves: the network cannot be used
         "--window-size=1280,1024", "--virtual-time-budget=30000"]
PROBE = """<script>
const typeset = () => window.MathJax && MathJax.startup ? MathJax.startup.promise : Promise.resolve();
window.addEventListener("load", () => typeset().then(() => {
  const count = (selector) => document.querySelectorAll(selector).length;
  const raw = [...document.querySelectorAll(".math")].filter(e => /\\\\[(\\[]/.test(e.textContent)).length;
  const wide = [...document.querySelectorAll("div.math, .table-wrapper")]
    .filter(e => e.scrollWidth > e.clientWidth + 1).length;
  document.body.setAttribute("data-probe",
    `typeset=${count("mjx-container")} raw=${raw} wide=${wide}`);
}));
</script>
"""
CDN = "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js"


def rendered(page: Path, profile: Path) -> tuple[str, dict[str, int] | None]:
    """The DOM of ``page`` after its scripts ran, and the probe's counts (None: the probe never ran)."""
    probe = page.with_name(page.stem + "-probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", probe.as_uri()],
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    found = re.search(r'data-probe="typeset=(\d+) raw=(\d+) wide=(\d+)"', dom)
    counts = dict(zip(("typeset", "raw", "wide"), map(int, found.groups()))) if found else None
    return dom, counts


def math_spans(page: Path) -> int:
    return page.read_text().count('class="math notranslate nohighlight"')


@pytest.fixture(scope="module")
def site(docs_site):
    result, html = docs_site
    assert result.returncode == 0, result.stderr[-5000:]
    return html


def test_the_front_page_renders_with_its_math_typeset_offline(site, tmp_path):
    dom, counts = rendered(site / "index.html", tmp_path / "profile")
    assert "exactlearn documentation" in dom and 'href="api.html"' in dom
    assert counts is not None, "MathJax did not finish"
    assert counts["typeset"] >= math_spans(site / "index.html") > 0
    assert counts["raw"] == 0 and counts["wide"] == 0, counts
    scripts = re.findall(r'<script[^>]*\ssrc="([^"]+)"', dom)
    assert scripts and not [s for s in scripts if "//" in s], scripts  # every script from the site itself


def test_the_api_page_renders_learn(site, tmp_path):
    dom, counts = rendered(site / "api.html", tmp_path / "profile")
    assert 'id="exactlearn.learn.learn"' in dom and 'id="exactlearn.Oracle"' in dom
    assert counts is not None and counts["typeset"] >= math_spans(site / "api.html"), counts
    assert counts["raw"] == 0 and counts["wide"] == 0, counts


def test_the_algorithm_page_typesets_every_formula_within_the_page(site, tmp_path):
    page = site / "algorithm.html"
    _, counts = rendered(page, tmp_path / "profile")
    assert counts is not None, "MathJax did not finish"
    assert counts["typeset"] >= math_spans(page) > 50
    assert counts["raw"] == 0 and counts["wide"] == 0, counts


def test_the_probe_sees_a_cdn_mathjax_fail_and_a_formula_too_wide(site, tmp_path):
    """The checks can fail: MathJax from a CDN never loads here, and a long display overflows."""
    page = site / "algorithm.html"
    cdn = site / "planted-cdn.html"
    cdn.write_text(re.sub(r'src="[^"]*mathjax/tex-svg.js"', f'src="{CDN}"', page.read_text()))
    _, counts = rendered(cdn, tmp_path / "profile1")
    assert counts is not None and counts["typeset"] == 0 and counts["raw"] == math_spans(page), counts
    wide = site / "planted-wide.html"
    formula = " + ".join(f"x_{{{i}}}" for i in range(200))
    wide.write_text(page.read_text().replace(
        "<h2>", f'<div class="math notranslate nohighlight">\\[{formula}\\]</div><h2>', 1))
    _, counts = rendered(wide, tmp_path / "profile2")
    assert counts is not None and counts["wide"] >= 1, counts
