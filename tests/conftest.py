import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Import the package from the source tree (the installed editable package
# points there too); the compiled extension is found either way.
sys.path.insert(0, str(ROOT / "python"))
