import sys

from mechanism.cli import main

sys.exit(main())
