"""Sphinx configuration for the baremetal-allocclient documentation.

The build needs no network access: no intersphinx, no remote images.
``doc/source/_ext`` holds one small local extension (the ``baremetal-alloc``
command table for cliff's autoprogram directive).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "_ext"))

project = "baremetal-allocclient"
copyright = "2026, baremetal-allocclient developers"
author = "baremetal-allocclient developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "cliff.sphinxext",
    "reno.sphinxext",
    "fixed_cliff",
    "openstackdocstheme",
]

exclude_patterns: list[str] = ["examples/README.rst"]
# openstackdocstheme, as OpenStack projects use it (it reads each page's
# last change from git; no network access is needed).
html_theme = "openstackdocs"
# The sidebar shows the whole site (tutorials, how-to, reference, ...);
# an empty analytics code (the theme's default loads Google's script).
html_theme_options = {
    "sidebar_mode": "toctree",
    "analytics_tracking_code": "",
}
html_static_path = ["_static"]
html_css_files = ["wide-code.css"]
openstackdocs_repo_name = "openstack/baremetal-allocclient"
openstackdocs_pdf_link = False
openstackdocs_use_storyboard = False
openstackdocs_auto_name = False
openstackdocs_bug_project = "baremetal-allocclient"
openstackdocs_bug_tag = "docs"
openstackdocs_auto_version = False
version = ""
release = ""
nitpicky = False

# The SDK's docstrings are Google style; type hints come from signatures.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
autodoc_typehints = "description"
autodoc_typehints_description_target = "all"
autodoc_member_order = "bysource"
autodoc_default_options = {"show-inheritance": True}

# cliff: commands are documented without the generic --help option.
autoprogram_cliff_ignored = ["--help"]
autoprogram_cliff_app_dist_name = "baremetal-allocclient"
