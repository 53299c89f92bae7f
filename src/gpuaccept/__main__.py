import sys

from gpuaccept.cli import main

sys.exit(main())
