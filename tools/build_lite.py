import sys; print("lite args", sys.argv, sys.executable)
