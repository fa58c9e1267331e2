import sys

from fixrl.harness.cli import main

sys.exit(main())
