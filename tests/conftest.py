import os

# Keep both frameworks quiet and single-process friendly in tests.
os.environ.setdefault("GLOG_v", "3")
os.environ.setdefault("OMP_NUM_THREADS", "1")
