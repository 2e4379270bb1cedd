"""The tests, one folder per package of src/nlieval (a package, so that two folders may
hold files of the same name); shared fixtures in conftest.py, shared code in helpers/."""
