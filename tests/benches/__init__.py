"""Tests of bench/'s own code (its accuracy runner, the calibration fit, the open benchmark's tables, the
independent generators, the fault harness's short run): the only test modules that import bench. The product's
tests take what they need from the package's testing modules and tests/ helpers
(tests/unit/test_tests_need_no_bench.py)."""
