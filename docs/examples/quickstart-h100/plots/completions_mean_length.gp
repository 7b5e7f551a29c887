# completions/mean_length: written by sparserl; run `gnuplot completions_mean_length.gp` to redraw.
set terminal pngcairo noenhanced size 900,520 font 'sans,10'
set output '/work/main/docs/examples/quickstart-h100/plots/completions_mean_length.png'
set title 'completions/mean_length'
set xlabel 'step'
set ylabel 'completions/mean_length'
set grid
set key outside right top
set datafile missing 'NaN'
plot '/work/main/docs/examples/quickstart-h100/plots/completions_mean_length.dat' index 0 using 1:2 with linespoints pt 7 ps 0.6 lw 2 lc rgb '#0072B2' title 'rl'
