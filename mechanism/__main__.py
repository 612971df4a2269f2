import sys

from mechanism._cli.main import main

sys.exit(main())
