"""placeholder"""
def render_html(report):
    return ""
