from xml.etree import ElementTree

from devtools.svgchart import Series, line_chart

SVG = "{http://www.w3.org/2000/svg}"


def test_chart_is_svg_with_one_dot_per_point_inside_the_plot():
    svg = line_chart(
        [Series("a", [(0, 80.0), (1, 90.0), (2, 92.5)]), Series("b", [(1, 85.0)], dashed=True)],
        title="t <&>",
        x_label="x",
        y_label="y",
    )
    root = ElementTree.fromstring(svg)  # noqa: S314 (our own output)
    dots = root.findall(f"{SVG}circle")
    assert len(dots) == 4
    ys = [float(d.get("cy")) for d in dots[:3]]
    assert ys[0] > ys[1] > ys[2]  # higher accuracy is drawn higher
    height = float(root.get("height"))
    assert all(0 < float(d.get("cy")) < height for d in dots)
    assert "t &lt;&amp;&gt;" in svg
