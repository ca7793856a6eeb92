"""The package list of the wheel (the rest of the configuration is pyproject.toml's).

setuptools reads it beside pyproject.toml: pyproject's `packages.find` can only list packages
whose folders are on disk under their parents, and the Terraform child modules live in
`terraform/modules/` (the layout of terraform-aws-modules), not inside unumctl/. So the
packages are found here and one more is added: `unumctl.render.modules`, mapped with
`package_dir` onto `terraform/modules/`, whose `.tf` files pyproject.toml's `package-data`
ships. unumctl.render.modules_dir reads them from the installed wheel and from
terraform/modules/ in a checkout (tests/aws/test_wheel_install.py checks both installs).
"""

from setuptools import find_namespace_packages, setup

# unumctl_testing (the test harnesses) is not shipped: tests, bench and tools import it from
# the checkout (pytest's rootdir, their sys.path line); never imported by unumctl/ or runtime/
# (tests/repo/test_layering.py); tests/aws/test_wheel_install.py checks the wheel has none of it
PACKAGES = find_namespace_packages(include=["unumctl", "unumctl.*", "runtime", "runtime.*"])

setup(packages=[*PACKAGES, "unumctl.render.modules"],
      package_dir={"unumctl.render.modules": "terraform/modules"})
